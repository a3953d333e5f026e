"""Where session state lives: a small interface and a bounded in-memory default.

`MemoryStore` keeps at most `max_sessions` sessions and forgets a session idle
for longer than `idle_ttl` seconds, so a long-running host does not grow
without limit. Sessions sit in a queue; every `get` drops the idle sessions at
its old end and moves up to `_SWEEP` sessions found in use there (hosts call
the Session API without coming back to the store, so the queue order is not
recency) to the new end. So the queue turns over whatever the access pattern,
and an idle session is dropped soon after its `idle_ttl`, whether it was
created first or last. Work per `get` is O(1) amortised.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

from loopguard.state.history import SessionState

_SWEEP = 4  # sessions in use moved to the new end per get (the queue's turnover rate)


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
            now = time.monotonic()
            state = self._sessions.get(key)
            if state is None:
                state = factory()
                self._sessions[key] = state
            state.last_used = now
            self._evict(now)
            return state

    def discard(self, key: str) -> None:
        with self._lock:
            self._sessions.pop(key, None)

    def __len__(self) -> int:
        return len(self._sessions)

    def _evict(self, now: float) -> None:
        """Drop idle sessions from the old end, turning the queue; over the cap, the least
        used of the oldest few."""
        sessions = self._sessions
        ttl = self.idle_ttl
        turns = _SWEEP
        while sessions:
            key, oldest = next(iter(sessions.items()))
            if ttl is not None and now - oldest.last_used > ttl:
                del sessions[key]
                continue
            if len(sessions) > self.max_sessions:
                candidates = [k for k, _ in zip(sessions, range(8), strict=False)]
                victim = min(candidates, key=lambda k: sessions[k].last_used)
                del sessions[victim]
                for k in candidates:
                    if k != victim:
                        sessions.move_to_end(k)  # used more recently: keep, look further next time
                continue
            if ttl is None or not turns:
                return
            sessions.move_to_end(key)  # in use: look behind it, so no session hides idle ones
            turns -= 1
