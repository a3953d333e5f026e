"""Session stores that outlive one process: `SqliteStore` (one machine) and `RedisStore` (a fleet).

Both keep each session as one versioned blob (`loopguard.stores.codec`) and write it back with
an optimistic compare-and-set, see `loopguard.stores.versioned`. `store_from_config` builds
one from a rules file's `store:` block. The in-memory default lives in `loopguard.state.store`.
"""

from __future__ import annotations

from loopguard.stores.config import store_from_config
from loopguard.stores.redis_store import RedisStore
from loopguard.stores.sqlite import SqliteStore
from loopguard.stores.versioned import StoreUnavailable, VersionedStore

__all__ = ["RedisStore", "SqliteStore", "StoreUnavailable", "VersionedStore", "store_from_config"]
