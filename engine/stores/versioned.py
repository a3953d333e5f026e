"""Shared state with optimistic versioned writes: the part common to the SQLite and Redis stores.

Every session is one blob with a version token. A process keeps the states it used
lately, decoded, with the token it read (`cache_size` of them). A session method runs on
the cached state and writes the result back only if the stored token is still the one it
read (compare-and-set); the store answers a failed write with the current blob, which is
decoded and the method run again. So a warm session costs one round trip per method and
two workers never lose each other's updates: the writes are serialised by the store.
Optimistic writes rather than a lock: a lock costs a round trip to take and one to release,
and a worker that dies holding it stalls the session until it expires; here a worker killed
mid-call loses that call only, and nobody waits.

Tokens are random (not counters), so a session that expired and was created again can
never be mistaken for the version a worker cached before.

Failures: a backend raises `StoreUnavailable`; the store then logs once per outage, waits
`retry_s` before trying the server again, and the session follows `fail_mode`. A record that
cannot be read (a damaged or planted blob, a token or column of the wrong type, a Redis key
of another type) is `StateCodecError`: that session's problem only, logged once, its calls
following `fail_mode`; the server answered, so it is no outage for the other sessions.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

from loopguard.state.history import SessionState
from loopguard.stores.codec import StateCodecError, decode, encode

log = logging.getLogger("loopguard")
_STRIPES = 64  # local locks: threads of one process take turns per session
_UNREADABLE_KEPT = 1000  # records known unreadable, remembered so each is decoded once
_VANISHED_LOGGED = 100  # vanished records a store logs (each is written again all the same)


class StoreUnavailable(Exception):
    """The backend could not be reached or answered too late."""


class Backend(Protocol):
    """Where blobs live. Tokens are positive ints; 0 means "no such session"."""

    def load(self, key: str) -> tuple[int, bytes] | None: ...

    def cas(self, key: str, expected: int, token: int, blob: bytes) -> tuple[int, bytes] | None:
        """Write if the stored token is `expected`: None when written, else the current
        (token, blob), (0, b"") when absent."""
        ...

    def delete(self, key: str) -> None: ...

    def count(self) -> int: ...


def check_token(token: Any) -> int:
    """A stored version token as read: a positive integer under 2**63, else StateCodecError."""
    if type(token) is not int or not 0 < token < 1 << 63:
        shown = repr(token)[:40]
        raise StateCodecError(f"stored version token is not a positive integer: {shown}")
    return token


def new_token() -> int:
    """A random 62-bit version token (never 0)."""
    return (int.from_bytes(os.urandom(8), "big") >> 2) | 1


class VersionedStore:
    """A `SessionStore` over a `Backend`; hands out `StoredSession`s."""

    blocking_io = True  # async hosts call sessions of this store in a worker thread

    def __init__(
        self,
        backend: Backend,
        *,
        fail_mode: str | None = None,
        cache_size: int = 10_000,
        retry_s: float = 1.0,
        name: str = "store",
    ) -> None:
        if fail_mode not in (None, "open", "closed"):
            raise ValueError(f"fail_mode must be 'open' or 'closed', not {fail_mode!r}")
        self.backend = backend
        self.fail_mode = fail_mode  # None: the rules' aggregator.fail_mode
        self.cache_size = max(1, cache_size)
        self.retry_s = retry_s
        self.name = name
        self.round_trips = 0  # backend calls made (measured by the benchmarks and tests)
        self.last_write: tuple[str, int, int] | None = None  # (key, token replaced, new token)
        self._cache: OrderedDict[str, tuple[int, SessionState]] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._stripes = [threading.RLock() for _ in range(_STRIPES)]
        self._down_since: float | None = None
        self._retry_at = 0.0
        self._damaged: set[str] = set()
        self._unreadable: OrderedDict[str, tuple[int, int, StateCodecError]] = OrderedDict()
        self._held_at: dict[str, float] = {}  # key -> when this process last read or wrote it
        self._vanished = 0  # records written again after they vanished (warnings are capped)

    # -- the Guard's interface ---------------------------------------------
    def get(self, key: str, factory: Callable[[], SessionState]) -> SessionState:
        """A read-only snapshot of the stored state (a fresh one when absent or unreadable)."""
        state = factory()
        try:
            loaded = self._call(self.backend.load, key)
            return state if loaded is None else decode(loaded[1], 1 << 30, state.index is not None)
        except (StoreUnavailable, StateCodecError):
            return state

    def discard(self, key: str) -> None:
        self.forget(key)
        with self._cache_lock:
            self._damaged.discard(key)
            self._unreadable.pop(key, None)
        self._call(self.backend.delete, key)

    def __len__(self) -> int:
        try:
            return int(self._call(self.backend.count))
        except StoreUnavailable:
            return len(self._cache)

    # -- used by StoredSession ---------------------------------------------
    def lock_for(self, key: str) -> threading.RLock:
        return self._stripes[hash(key) % _STRIPES]

    def checkout(
        self, key: str, factory: Callable[[], SessionState], history_size: int, indexed: bool
    ) -> tuple[int, SessionState]:
        """(token, state): the cached state, else the stored one, else a fresh one (token 0)."""
        with self._cache_lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
        loaded = self._call(self.backend.load, key)
        return self.adopt(key, loaded or (0, b""), factory, history_size, indexed)

    def refresh(
        self, key: str, factory: Callable[[], SessionState], history_size: int, indexed: bool
    ) -> tuple[int, SessionState]:
        """The stored state now (one round trip; decoded only when it changed)."""
        loaded = self._call(self.backend.load, key) or (0, b"")
        with self._cache_lock:
            cached = self._cache.get(key)
        if cached is not None and cached[0] == loaded[0] and loaded[0]:
            return cached
        return self.adopt(key, loaded, factory, history_size, indexed)

    def adopt(
        self,
        key: str,
        current: tuple[int, bytes],
        factory: Callable[[], SessionState],
        history_size: int,
        indexed: bool,
    ) -> tuple[int, SessionState]:
        """Decode and cache what the backend holds (StateCodecError when unreadable)."""
        token, blob = current
        if not token:
            state = factory()
        else:
            with self._cache_lock:
                known = self._unreadable.get(key)
            if known is not None and known[:2] == (token, len(blob)):
                self.forget(key)
                raise known[2]  # the same unreadable record: not inflated again
            try:
                state = decode(blob, history_size, indexed)
            except StateCodecError as exc:
                self.forget(key)
                with self._cache_lock:
                    self._unreadable[key] = (token, len(blob), exc)
                    while len(self._unreadable) > _UNREADABLE_KEPT:
                        self._unreadable.popitem(last=False)
                raise
        self.remember(key, token, state)
        return token, state

    def commit(self, key: str, expected: int, state: SessionState) -> tuple[int, bytes] | None:
        """Write the state back; None when written, else the current (token, blob)."""
        token = new_token()
        try:
            current = self._call(self.backend.cas, key, expected, token, encode(state))
        except (StoreUnavailable, StateCodecError):
            self.forget(key)  # the write may or may not have landed: read it again next time
            raise
        if current is None:
            self.remember(key, token, state)
            self.last_write = (key, expected, token)
        elif expected and not current[0] and self._held_lately(key):
            # the record this process read or wrote is gone, not replaced: a deleted or
            # replaced SQLite file, FLUSHALL, a key deleted by hand. The copy held here is
            # the best there is: written again (a rival's newer record would win the insert)
            self._report_vanished(key)
            return self.commit(key, 0, state)
        return current

    def remember(self, key: str, token: int, state: SessionState) -> None:
        with self._cache_lock:
            self._cache[key] = (token, state)
            self._cache.move_to_end(key)
            self._held_at[key] = time.monotonic()
            while len(self._cache) > self.cache_size:
                self._held_at.pop(self._cache.popitem(last=False)[0], None)

    def forget(self, key: str) -> None:
        with self._cache_lock:
            self._cache.pop(key, None)
            self._held_at.pop(key, None)

    def _held_lately(self, key: str) -> bool:
        """This process read or wrote the record within the store's ttl (an older one may
        simply have expired: it is not brought back)."""
        with self._cache_lock:
            held = self._held_at.get(key)
        ttl = getattr(self.backend, "ttl_s", None)
        return held is not None and (ttl is None or time.monotonic() - held < ttl)

    def _report_vanished(self, key: str) -> None:
        self._vanished += 1
        if self._vanished > _VANISHED_LOGGED:
            return
        log.warning(
            "loopguard %s: the stored state of session %r vanished while this process held "
            "it (the database file deleted or replaced, FLUSHALL, a key deleted); written "
            "again from this process's copy%s",
            self.name,
            key,
            " (further ones are not logged)" if self._vanished == _VANISHED_LOGGED else "",
        )

    def report_damaged(self, key: str, error: Exception) -> None:
        """Log an unreadable stored state once per key (it is left as it is, never overwritten)."""
        with self._cache_lock:
            if key in self._damaged or len(self._damaged) > 10_000:
                return
            self._damaged.add(key)
        log.error(
            "loopguard %s: the stored state of session %r cannot be read and is left "
            "untouched (%s); its calls follow fail_mode until it is discarded",
            self.name,
            key,
            error,
        )

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """One backend round trip, with outage bookkeeping (log once, back off, recover)."""
        if self._down_since is not None and time.monotonic() < self._retry_at:
            raise StoreUnavailable(f"{self.name} unavailable (retrying after {self.retry_s:g} s)")
        self.round_trips += 1
        try:
            result = fn(*args)
        except StateCodecError:
            self._answered()  # one session's record is unreadable; the server is fine
            raise
        except StoreUnavailable as exc:
            now = time.monotonic()
            self._retry_at = now + self.retry_s
            if self._down_since is None:
                self._down_since = now
                log.warning(
                    "loopguard %s unavailable: %s; calls follow fail_mode until it is "
                    "back (logged once per outage)",
                    self.name,
                    exc,
                )
            raise
        self._answered()
        return result

    def _answered(self) -> None:
        """The backend answered: an outage, if any, is over (logged once)."""
        if self._down_since is not None:
            log.warning(
                "loopguard %s is back after %.1f s", self.name, time.monotonic() - self._down_since
            )
            self._down_since = None
