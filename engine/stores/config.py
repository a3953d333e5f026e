"""The rules file's `store:` block made into a store (SQLite for `path`, Redis for `url`).

The block is validated by the rules schema; this also refuses a URL that carries a password
(the password comes from the environment variable `password_env`, so rules files can be
committed and shared) and resolves a relative SQLite path against the rules file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from loopguard.errors import RulesError
from loopguard.findings import Finding
from loopguard.stores.redis_store import RedisStore
from loopguard.stores.sqlite import SqliteStore
from loopguard.stores.versioned import VersionedStore


def _error(message: str, key: str, hint: str, source: str) -> RulesError:
    return RulesError([Finding(source, 0, 0, "error", message, f"store.{key}", hint, "store")])


def store_from_config(block: Mapping[str, Any], source: str = "<rules>") -> VersionedStore:
    """A store for a `store:` block; `source` is the rules file (for relative paths)."""
    common: dict[str, Any] = {
        k: block[k] for k in ("ttl_s", "fail_mode", "cache_size", "retry_s") if k in block
    }
    if "url" in block:
        url = str(block["url"])
        try:
            parts = urlsplit(url)
            secret = parts.password
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number
        except ValueError:
            raise _error(f"store.url is not a valid URL: {url!r}", "url", "", source) from None
        if secret:
            raise _error(
                "store.url contains a password; rules files must not hold secrets",
                "url",
                "remove it from the URL and name an environment variable that "
                "holds it in store.password_env",
                source,
            )
        return RedisStore.from_url(
            url,
            password_env=block.get("password_env"),
            timeout_s=float(block.get("timeout_s", 0.5)),
            key_prefix=str(block.get("key_prefix", "loopguard:")),
            **common,
        )
    if "path" in block:
        path = os.path.expanduser(str(block["path"]))
        if not os.path.isabs(path) and os.path.isfile(source):
            path = os.path.join(os.path.dirname(os.path.abspath(source)), path)
        return SqliteStore(path, **common)
    raise _error("store needs either path (SQLite) or url (Redis/Valkey)", "", "", source)
