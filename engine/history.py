"""Per-session state: the capped call history and the small indexes detectors read.

Memory stays proportional to `history_size` entries of fixed size: an entry
holds digests (16-byte values), never the arguments themselves. Detectors that
need more (the fuzzy detector's grams) keep it in `SessionState.scratch`,
bounded by their own window.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

VETO = b"veto"  # the outcome of a call the guard blocked


class HistoryEntry:
    """One recorded call. `outcome` is None while the call is pending."""

    __slots__ = ("seq", "tool", "digest", "outcome", "run_id", "turn", "call_id", "unknown")

    def __init__(
        self, seq: int, tool: str, digest: bytes, run_id: str | None, turn: int, call_id: str | None
    ) -> None:
        self.seq = seq
        self.tool = tool
        self.digest = digest  # args digest: covers the tool name and the canonical arguments
        self.outcome: bytes | None = None
        self.run_id = run_id
        self.turn = turn
        self.call_id = call_id
        self.unknown: str | None = None  # name of the unknown tool this failure reports

    @property
    def pending(self) -> bool:
        return self.outcome is None

    @property
    def failed(self) -> bool:
        return self.outcome is not None and self.outcome.startswith(b"error:")

    def to_dict(self) -> dict[str, Any]:
        outcome = self.outcome
        shown = None if outcome is None else (
            "veto" if outcome == VETO else outcome.split(b":", 1)[0].decode() + ":" + outcome[-16:].hex()
        )
        return {
            "seq": self.seq,
            "tool": self.tool,
            "args_digest": self.digest.hex(),
            "outcome": shown,
            "run_id": self.run_id,
            "turn": self.turn,
            "call_id": self.call_id,
            "unknown_tool": self.unknown,
        }

    def __repr__(self) -> str:
        return f"HistoryEntry({self.to_dict()!r})"


@dataclass(slots=True)
class Call:
    """The call being decided, fingerprinted once and handed to every detector."""

    tool: str
    args: Any  # parsed arguments (dict, list, raw text …)
    canonical: str  # canonical argument text
    digest: bytes
    seq: int
    turn: int
    run_id: str | None
    call_id: str | None
    outcome: bytes | None = None  # set for after_call checks
    unknown: str | None = None  # set by after_call checks of unknown-tool failures
    error: str | None = None  # the error text, for after_call checks of failures


class SessionState:
    """Everything loopguard remembers about one session; guarded by `lock`."""

    __slots__ = (
        "lock", "history", "index", "seq", "turn", "last_used", "criticals", "warned",
        "scratch", "turn_state", "lang", "tools_closed",
    )

    def __init__(self, history_size: int, indexed: bool) -> None:
        self.lock = threading.RLock()
        self.history: deque[HistoryEntry] = deque()
        # (run_id, digest) -> entries of that signature, oldest first; only when a
        # rolling detector needs it (kept in step with `history`).
        self.index: dict[Any, list[HistoryEntry]] | None = {} if indexed else None
        self.seq = 0
        self.turn = 0
        self.last_used = time.monotonic()
        self.criticals: dict[str | None, int] = {}  # criticals per run id (escalation)
        self.warned: dict[str, int] = {}  # warning key -> last notified bucket
        self.scratch: dict[str, Any] = {}  # per-detector state, keyed by detector id
        self.turn_state: Any = None  # the turn tracker's state (required tool, retries)
        self.lang: str | None = None
        self.tools_closed = False


def sig_key(run_id: str | None, digest: bytes) -> Any:
    """Index key of a signature within a run scope."""
    return digest if run_id is None else (run_id, digest)


def append(state: SessionState, entry: HistoryEntry, history_size: int) -> None:
    """Record an entry, evicting the oldest beyond `history_size`."""
    history = state.history
    index = state.index
    while len(history) >= history_size:
        old = history.popleft()
        if index is not None:
            key = sig_key(old.run_id, old.digest)
            bucket = index.get(key)
            if bucket:
                bucket.pop(0)
                if not bucket:
                    del index[key]
    history.append(entry)
    if index is not None:
        index.setdefault(sig_key(entry.run_id, entry.digest), []).append(entry)


def same_signature(state: SessionState, call: Call) -> list[HistoryEntry]:
    """Scoped entries with the call's tool and arguments, oldest first."""
    if state.index is not None:
        return state.index.get(sig_key(call.run_id, call.digest), [])
    return [e for e in state.history if e.digest == call.digest and e.run_id == call.run_id]


def scoped_newest_first(state: SessionState, run_id: str | None) -> Iterator[HistoryEntry]:
    """Entries of one run scope, newest first."""
    for entry in reversed(state.history):
        if entry.run_id == run_id:
            yield entry


def no_progress_streak(entries: list[HistoryEntry], cap: int) -> tuple[int, tuple[int, ...]]:
    """SPEC §2 streak over one signature's entries: equal outcomes from the newest back.

    Pending entries are skipped; vetoes count as equal to the outcome they
    block. Counting stops at `cap` (no threshold needs more).
    """
    reference: bytes | None = None
    count = 0
    evidence: list[int] = []
    for entry in reversed(entries):
        outcome = entry.outcome
        if outcome is None:
            continue
        if outcome != VETO:
            if reference is None:
                reference = outcome
            elif outcome != reference:
                break
        count += 1
        evidence.append(entry.seq)
        if count >= cap:
            break
    return count, tuple(evidence)
