"""A per-session window of the last few calls, for the fuzzy doom-loop detector.

A list trimmed by hand instead of a `deque(maxlen=…)`: a deque costs about
600 bytes even when it holds five items, and every idle session keeps its
windows until its next call.
"""

from __future__ import annotations

from typing import Any

from loopguard.state.history import SessionState


class TurnWindow:
    """The newest `size` items recorded in one turn (or in the session, for turn 0)."""

    __slots__ = ("turn", "size", "items")

    def __init__(self, turn: int, size: int) -> None:
        self.turn = turn
        self.size = size
        self.items: list[Any] = []

    @classmethod
    def of(cls, state: SessionState, key: str, turn: int, size: int) -> TurnWindow:
        """The window stored under `key` for `turn`, started afresh on a new turn."""
        window: TurnWindow | None = state.scratch.get(key)
        if window is None or window.turn != turn:
            window = state.scratch[key] = cls(turn, max(size, 0))
        return window

    def push(self, item: Any) -> None:
        """Add the newest item, dropping the oldest beyond `size`."""
        items = self.items
        items.append(item)
        if len(items) > self.size:
            del items[0]
