"""Where session state lives: a small interface and a bounded in-memory default.

`MemoryStore` keeps at most `max_sessions` sessions and forgets a session idle
for longer than `idle_ttl` seconds, so a long-running host does not grow
without limit. Eviction is amortised O(1): sessions sit in insertion order
and a recently used one found at the old end is moved to the new end.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

from .history import SessionState


class SessionStore(Protocol):
    """The store interface the Guard uses."""

    def get(self, key: str, factory: Callable[[], SessionState]) -> SessionState:
        """The state for `key`, created with `factory` when absent."""
        ...

    def discard(self, key: str) -> None:
        """Forget a session."""
        ...

    def __len__(self) -> int: ...


class MemoryStore:
    """Bounded, thread-safe, in-process store."""

    def __init__(self, max_sessions: int = 100_000, idle_ttl: float | None = 6 * 3600.0) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        self.max_sessions = max_sessions
        self.idle_ttl = idle_ttl
        self._sessions: OrderedDict[str, SessionState] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, factory: Callable[[], SessionState]) -> SessionState:
        with self._lock:
            state = self._sessions.get(key)
            if state is None:
                state = factory()
                self._sessions[key] = state
                self._evict(time.monotonic())
            state.last_used = time.monotonic()
            return state

    def discard(self, key: str) -> None:
        with self._lock:
            self._sessions.pop(key, None)

    def __len__(self) -> int:
        return len(self._sessions)

    def _evict(self, now: float) -> None:
        """Drop idle sessions from the old end; over the cap, the least used of the oldest few."""
        sessions = self._sessions
        ttl = self.idle_ttl
        while sessions:
            key, oldest = next(iter(sessions.items()))
            if ttl is not None and now - oldest.last_used > ttl:
                del sessions[key]
                continue
            if len(sessions) <= self.max_sessions:
                return
            candidates = [k for k, _ in zip(sessions, range(8))]
            victim = min(candidates, key=lambda k: sessions[k].last_used)
            del sessions[victim]
            for k in candidates:
                if k != victim:
                    sessions.move_to_end(k)  # used more recently: keep, look further next time
