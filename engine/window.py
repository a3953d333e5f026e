"""A per-session window of the last few calls, for the doom-loop detectors.

A list trimmed by hand instead of a `deque(maxlen=…)`: a deque costs about
600 bytes even when it holds five items, and every idle session keeps its
windows until its next call.
"""

from __future__ import annotations

from typing import Any

from .history import VETO, SessionState


class Item:
    """One call in a window: its signature, where it was asked for, and what came back."""

    __slots__ = ("digest", "seq", "round", "run_id", "shape", "failed", "status")

    def __init__(self, digest: bytes, seq: int, round: int, run_id: str | None) -> None:
        self.digest = digest
        self.seq = seq
        self.round = round
        self.run_id = run_id
        self.shape: bytes | None = None  # None while pending (see loopguard.outcomes)
        self.failed = False
        self.status = False


class TurnWindow:
    """The newest `size` items recorded in one turn (or in the session, for turn 0)."""

    __slots__ = ("turn", "size", "items", "last_seq", "last_text")

    def __init__(self, turn: int, size: int) -> None:
        self.turn = turn
        self.size = size
        self.items: list[Any] = []
        self.last_seq = 0  # the newest call whose result text is kept (for near-equality)
        self.last_text: str | None = None

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


def veto_of(state: SessionState, seq: int) -> bytes | None:
    """VETO when the history says the guard blocked call `seq`, else None (still pending)."""
    for entry in reversed(state.history):
        if entry.seq == seq:
            return VETO if entry.outcome == VETO else None
        if entry.seq < seq:
            break
    return None
