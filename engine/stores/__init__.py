"""Session stores that outlive one process: `SqliteStore` (one machine) and `RedisStore` (a fleet).

Both keep each session as one versioned blob (`loopguard.state_codec`) and write it back with
an optimistic compare-and-set, see `loopguard.stores.versioned`. `store_from_config` builds
one from a rules file's `store:` block. The in-memory default lives in `loopguard.store`.
"""

from __future__ import annotations

from .config import store_from_config
from .redis_store import RedisStore
from .sqlite import SqliteStore
from .versioned import StoreUnavailable, VersionedStore

__all__ = ["RedisStore", "SqliteStore", "StoreUnavailable", "VersionedStore", "store_from_config"]
