"""Per-session state: the capped call history and the small indexes detectors read.

Memory stays proportional to `history_size` entries of fixed size: an entry
holds digests (16-byte values), never the arguments themselves. Detectors that
need more (the fuzzy detector's grams) keep it in `SessionState.scratch`,
bounded by their own window.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

VETO = b"veto"  # the outcome of a call the guard blocked
EVIDENCE_MAX = 64  # history entries a vote lists as evidence, newest kept
FAILED = 1  # HistoryEntry.flags: the call itself failed (see loopguard.policy.outcomes)
STATUS = 2  # HistoryEntry.flags: the result reports a job in progress (a poll)
RECENT = 64  # newest calls whose digests `SessionState.digests` keeps ("seen lately")
UNREAD = 4  # HistoryEntry.flags: a first occurrence, its result read only if it comes round


class HistoryEntry:
    """One recorded call. `outcome` is None while the call is pending."""

    FAILED = FAILED  # a bit of `flags`, for plugins (loopguard.plugin exports the class)
    STATUS = STATUS

    __slots__ = (
        "seq",
        "tool",
        "digest",
        "outcome",
        "run_id",
        "turn",
        "call_id",
        "unknown",
        "round",
        "shape",
        "flags",
    )

    def __init__(
        self,
        seq: int,
        tool: str,
        digest: bytes,
        run_id: str | None,
        turn: int,
        call_id: str | None,
        round: int = 0,
    ) -> None:
        self.seq = seq
        self.round = round  # the model response (batch) that asked for this call
        self.tool = tool
        self.digest = digest  # args digest: covers the tool name and the canonical arguments
        self.outcome: bytes | None = None
        self.run_id = run_id
        self.turn = turn
        self.call_id = call_id
        self.unknown: str | None = None  # name of the unknown tool this failure reports
        # What the outcome means to the loop detectors (set by after_call when a detector
        # reads outcomes): FAILED/STATUS flags, and the shape two outcomes must share to be
        # "the same" when it is not the outcome itself (digit-blind failures, near-equal results).
        self.shape: bytes | None = None
        self.flags = 0

    @property
    def same_as(self) -> bytes | None:
        """The outcome as loop detectors compare it: VETO, None while pending, else its shape."""
        return self.shape if self.shape is not None else self.outcome

    @property
    def pending(self) -> bool:
        return self.outcome is None

    @property
    def failed(self) -> bool:
        return self.outcome is not None and self.outcome.startswith(b"error:")

    def to_dict(self) -> dict[str, Any]:
        outcome = self.outcome
        shown = (
            None
            if outcome is None
            else (
                "veto"
                if outcome == VETO
                else outcome.split(b":", 1)[0].decode("utf-8", "replace")
                + ":"
                + outcome[-16:].hex()
            )
        )
        return {
            "seq": self.seq,
            "tool": self.tool,
            "args_digest": self.digest.hex(),
            "outcome": shown,
            "run_id": self.run_id,
            "turn": self.turn,
            "round": self.round,
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
    round: int = 0  # the model response (batch) that asked for this call; see Session.begin_round
    outcome: bytes | None = None  # set for after_call checks
    unknown: str | None = None  # set by after_call checks of unknown-tool failures
    error: str | None = None  # the error text, for after_call checks of failures
    text: str | None = None  # after_call: the normalised result text, or the error text
    flags: int = 0  # after_call: FAILED / STATUS, when the policy reads outcomes
    seen: bool = False  # before_call: its arguments were seen lately (`seen_lately`)


class SessionState:
    """Everything loopguard remembers about one session; guarded by `lock`."""

    __slots__ = (
        "lock",
        "history",
        "index",
        "seq",
        "turn",
        "last_used",
        "criticals",
        "warned",
        "scratch",
        "turn_state",
        "lang",
        "tools_closed",
        "round",
        "batch_open",
        "digests",
        "last_result",
    )

    def __init__(self, history_size: int, indexed: bool) -> None:
        self.lock = threading.RLock()
        self.history: deque[HistoryEntry] = deque()
        # The argument digests of the newest min(history_size, RECENT) calls, oldest first:
        # `digest in state.digests` tells in one short C-level scan whether a call was seen
        # lately (bounded, so the cost never grows with `history_size`).
        self.digests: list[bytes] = []
        # (entry, result text or None) of the newest completed call: what a back-to-back
        # repeat is compared with (see loopguard.policy.outcomes; texts over 16 KB are not kept).
        self.last_result: tuple[HistoryEntry, str | None] | None = None
        # (run_id, digest) -> entries of that signature, oldest first; only when a
        # rolling detector needs it (kept in step with `history`).
        self.index: dict[Any, Bucket] | None = {} if indexed else None
        self.seq = 0
        self.turn = 0
        self.last_used = time.monotonic()
        self.criticals: dict[str | None, int] = {}  # criticals per run id (escalation)
        self.warned: dict[str, int] = {}  # warning key -> last notified bucket
        self.scratch: dict[str, Any] = {}  # per-detector state, keyed by detector id
        self.turn_state: Any = None  # the turn tracker's state (required tool, retries)
        self.lang: str | None = None
        self.tools_closed = False
        self.round = 0  # number of the newest round (model response) seen
        self.batch_open = False  # begin_round() was called: calls share `round` until the next one


def sig_key(run_id: str | None, digest: bytes) -> Any:
    """Index key of a signature within a run scope."""
    return digest if run_id is None else (run_id, digest)


class Bucket:
    """One signature's entries (oldest first) and its no-progress streak, kept up to date.

    The streak is defined by walking newest to oldest: pending entries are
    skipped, the first outcome sets the reference, equal outcomes and vetoes
    add one, the first different outcome stops. Folding completed entries
    oldest-first gives the same count, so each call folds only the entries
    completed since the last one. A pending entry stops the permanent fold
    (its outcome lands later, in the middle); entries after it are folded
    into a throw-away copy.
    """

    __slots__ = ("entries", "upto", "ref", "seqs", "vetoes", "answer")

    def __init__(self) -> None:
        self.entries: list[HistoryEntry] = []
        self.upto = 0  # newest seq folded in for good
        self.ref: bytes | None = None
        self.seqs: list[int] = []  # the streak's entries, oldest first
        self.vetoes = 0  # vetoes since the newest real outcome
        # (first_seq, entries, newest seq, streak) of the newest `streak` with nothing
        # pending: the same until an entry comes or leaves (outcomes land only on pending
        # entries), so the detectors asking about one call share it
        self.answer: tuple[int, int, int, tuple[int, tuple[int, ...]]] | None = None

    def _fold(self, entry: HistoryEntry) -> None:
        outcome = entry.outcome
        if outcome == VETO:
            self.vetoes += 1
        elif self.ref is None or outcome == self.ref:
            self.ref, self.vetoes = outcome, 0
        else:  # progress: the streak restarts, keeping the vetoes just before it
            # (those still held: `streak` drops seqs that left the history, not `vetoes`,
            # so a plain `len - vetoes` could go negative and keep too few)
            self.seqs = self.seqs[max(0, len(self.seqs) - self.vetoes) :] if self.vetoes else []
            self.ref, self.vetoes = outcome, 0
        self.seqs.append(entry.seq)

    def streak(self, first_seq: int) -> tuple[int, tuple[int, ...]]:
        """(count, the streak's newest seqs) over the entries still in the history."""
        entries = self.entries
        answer = self.answer
        newest = entries[-1].seq if entries else 0
        if answer is not None and answer[:3] == (first_seq, len(entries), newest):
            return answer[3]
        i = len(entries)
        while i and entries[i - 1].seq > self.upto:
            i -= 1
        view = self
        for entry in entries[i:]:
            if entry.outcome is None:
                if view is self:
                    view = self._copy()
                continue
            if view is self:
                self.upto = entry.seq
            view._fold(entry)
        if self.seqs and self.seqs[0] < first_seq:
            del self.seqs[: bisect_left(self.seqs, first_seq)]
        seqs = view.seqs
        start = bisect_left(seqs, first_seq)
        streak = len(seqs) - start, tuple(seqs[max(start, len(seqs) - EVIDENCE_MAX) :])
        if view is self:
            self.answer = first_seq, len(entries), newest, streak
        return streak

    def _copy(self) -> Bucket:
        other = Bucket()
        other.ref, other.seqs, other.vetoes = self.ref, list(self.seqs), self.vetoes
        return other


def append(state: SessionState, entry: HistoryEntry, history_size: int) -> None:
    """Record an entry, evicting the oldest beyond `history_size`."""
    history = state.history
    index = state.index
    digests = state.digests
    while len(history) >= history_size:
        old = history.popleft()
        if index is not None:
            key = sig_key(old.run_id, old.digest)
            bucket = index.get(key)
            if bucket is not None:
                bucket.entries.pop(0)
                if not bucket.entries:
                    del index[key]
    history.append(entry)
    digests.append(entry.digest)
    if len(digests) > RECENT or len(digests) > history_size:
        del digests[0]
    if index is not None:
        key = sig_key(entry.run_id, entry.digest)
        bucket = index.get(key)
        if bucket is None:
            bucket = index[key] = Bucket()
        bucket.entries.append(entry)


def seen_lately(state: SessionState, run_id: str | None, digest: bytes) -> bool:
    """Whether a call with these arguments is among the newest `RECENT` calls (one C-level
    scan) or, in an indexed history, anywhere in the history in its run scope: what a
    repeat-only detector needs before it can vote (`Call.seen`)."""
    if digest in state.digests:
        return True
    index = state.index
    return index is not None and sig_key(run_id, digest) in index


def same_signature(state: SessionState, call: Call) -> list[HistoryEntry]:
    """Scoped entries with the call's tool and arguments, oldest first."""
    if state.index is not None:
        bucket = state.index.get(sig_key(call.run_id, call.digest))
        return bucket.entries if bucket is not None else []
    return [e for e in state.history if e.digest == call.digest and e.run_id == call.run_id]


def no_progress_streak(state: SessionState, call: Call) -> tuple[int, tuple[int, ...]]:
    """The no-progress streak of the call's signature: (count, matching seqs)."""
    first = state.history[0].seq if state.history else 0
    if state.index is not None:
        bucket = state.index.get(sig_key(call.run_id, call.digest))
        return bucket.streak(first) if bucket is not None else (0, ())
    scratch = Bucket()
    scratch.entries = same_signature(state, call)
    return scratch.streak(first)


def entry_of(state: SessionState, seq: int) -> HistoryEntry | None:
    """The history entry of call `seq` (searched from the newest), if still in the history."""
    for entry in reversed(state.history):
        if entry.seq <= seq:
            return entry if entry.seq == seq else None
    return None


def scoped_newest_first(state: SessionState, run_id: str | None) -> Iterator[HistoryEntry]:
    """Entries of one run scope, newest first."""
    for entry in reversed(state.history):
        if entry.run_id == run_id:
            yield entry


def pending_entry(state: SessionState, key: str, tool: str, digest: bytes) -> HistoryEntry | None:
    """The oldest pending entry answered by `key` (a call id, or the tool name of a call
    without one, preferring the same arguments); None when the history has none."""
    fallback = None
    for entry in state.history:
        if entry.outcome is not None:
            continue
        if entry.call_id == key:
            return entry
        if entry.call_id is None and entry.tool == tool:
            if entry.digest == digest:
                return entry
            fallback = fallback or entry
    return fallback
