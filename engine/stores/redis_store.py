"""`RedisStore`: session state in Redis or Valkey, shared by a fleet of workers.

Needs the `redis` client (the `redis` extra), which speaks to Redis
and Valkey alike. A session is one hash `{prefix}{key}` with fields `v` (version token) and
`b` (the blob), read by a small script that leaves a blob over MAX_STATE_BYTES on the
server; every write renews its TTL, so idle sessions expire on the server. The
compare-and-set is one server-side Lua script (`EVALSHA`): it writes when the token is the
one the worker read, else returns the current token and blob in the same round trip. So a
`before_call` + `after_call` pair costs two round trips when the worker holds the session's
newest state, three when another worker wrote it since (one more per lost race).

The client never retries on its own and times out after `timeout_s`; an unreachable or slow
server is a `StoreUnavailable` (see `versioned` for fail_mode and back-off). redis-py's
connection pool reconnects by itself, and after a fork the child opens its own connections.
"""

from __future__ import annotations

import os
from typing import Any

from loopguard.errors import install_hint
from loopguard.stores.codec import MAX_STATE_BYTES, StateCodecError
from loopguard.stores.versioned import StoreUnavailable, VersionedStore, check_token

# Both scripts answer {v, b}, or {v, false, size} when b is over MAX_STATE_BYTES: a planted
# huge value is never sent (reading 512 MB would outlast timeout_s: an outage for everyone).
_LOAD = """
local n = redis.call('HSTRLEN', KEYS[1], 'b')
if n > tonumber(ARGV[1]) then return {redis.call('HGET', KEYS[1], 'v'), false, n} end
return redis.call('HMGET', KEYS[1], 'v', 'b')
"""
_CAS = """
local v = redis.call('HGET', KEYS[1], 'v')
if (v == false and ARGV[1] == '0') or v == ARGV[1] then
  redis.call('HSET', KEYS[1], 'v', ARGV[2], 'b', ARGV[3])
  if ARGV[4] ~= '0' then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
  return 1
end
local n = redis.call('HSTRLEN', KEYS[1], 'b')
if n > tonumber(ARGV[5]) then return {v, false, n} end
return redis.call('HMGET', KEYS[1], 'v', 'b')
"""


def _errors() -> tuple[type[BaseException], ...]:
    import redis

    return (redis.exceptions.RedisError, OSError)


def _record(token: Any, blob: Any, *size: Any) -> tuple[int, bytes] | None:
    """A hash's (token, blob); None when the session is absent (neither field)."""
    if size:
        raise StateCodecError(
            f"stored state is {int(size[0]) >> 20} MiB, over the limit of "
            f"{MAX_STATE_BYTES >> 20} MiB (not read)"
        )
    if token is None and blob is None:
        return None
    if token is None or blob is None:
        raise StateCodecError(f"stored record lacks its {'v' if token is None else 'b'} field")
    if not isinstance(token, bytes) or not token.isdigit() or len(token) > 19:
        raise StateCodecError(f"stored version token is not a number: {bytes(token)[:40]!r}")
    value = int(token)
    if str(value).encode() != token:  # the CAS script compares the text: "07" never matches
        raise StateCodecError(f"stored version token is not canonical: {token[:40]!r}")
    return check_token(value), bytes(blob)


class RedisBackend:
    """Blobs in Redis/Valkey hashes under one key prefix."""

    def __init__(
        self, client: Any, key_prefix: str = "loopguard:", ttl_s: float | None = 6 * 3600.0
    ) -> None:
        self.client = client
        self.prefix = key_prefix
        self.ttl_s = ttl_s  # (VersionedStore: a record older than this may have expired)
        self.ttl_ms = 0 if ttl_s is None else max(1, int(ttl_s * 1000))
        self._cas = client.register_script(_CAS)
        self._load = client.register_script(_LOAD)
        self._errors = _errors()

    def _do(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """One command; the server's errors are an outage, except a key of the wrong type,
        which is that session's damaged record (StateCodecError), not everyone's."""
        try:
            return fn(*args, **kwargs)
        except self._errors as exc:
            if "WRONGTYPE" in str(exc):
                raise StateCodecError(
                    "the stored key is not a loopguard hash (another type of value was "
                    f"written under the key prefix): {str(exc)[:200]}"
                ) from None
            raise StoreUnavailable(f"Redis: {type(exc).__name__}: {exc}") from None

    def load(self, key: str) -> tuple[int, bytes] | None:
        return _record(*self._do(self._load, keys=[self.prefix + key], args=[MAX_STATE_BYTES]))

    def cas(self, key: str, expected: int, token: int, blob: bytes) -> tuple[int, bytes] | None:
        answer = self._do(
            self._cas,
            keys=[self.prefix + key],
            args=[expected, token, blob, self.ttl_ms, MAX_STATE_BYTES],
        )
        if answer == 1:
            return None
        return _record(*answer) or (0, b"")

    def delete(self, key: str) -> None:
        self._do(self.client.delete, self.prefix + key)

    def count(self) -> int:
        return sum(1 for _ in self._do(self.client.scan_iter, match=self.prefix + "*", count=1000))


class RedisStore(VersionedStore):
    """`RedisStore.from_url("redis://host:6379/0")`, or around a `redis.Redis` client."""

    def __init__(
        self,
        client: Any,
        *,
        key_prefix: str = "loopguard:",
        ttl_s: float | None = 6 * 3600.0,
        fail_mode: str | None = None,
        cache_size: int = 10_000,
        retry_s: float = 1.0,
    ) -> None:
        super().__init__(
            RedisBackend(client, key_prefix, ttl_s),
            fail_mode=fail_mode,
            cache_size=cache_size,
            retry_s=retry_s,
            name="Redis store",
        )

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        password: str | None = None,
        password_env: str | None = None,
        timeout_s: float = 0.5,
        **kwargs: Any,
    ) -> RedisStore:
        """A store on a new client for `url`; the password from `password` or the
        environment variable `password_env` (never from the rules file)."""
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError:
            raise ImportError(
                "RedisStore needs the redis client: " + install_hint("redis")
            ) from None
        if password is None and password_env:
            password = os.environ.get(password_env)
        options: dict[str, Any] = {} if password is None else {"password": password}
        client = redis.Redis.from_url(
            url,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),
            retry_on_timeout=False,
            **options,
        )
        return cls(client, **kwargs)
