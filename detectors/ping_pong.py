"""ping_pong — bouncing between two calls.

A rolling detector: runs only when `loop_detection.enabled` is true.

Let L be the newest call in the current run and O the one before it, which
must differ from L. Walking back, the history alternates L, O, L, O … up to
the first break: that is the tail. When the current call is O again, the
count is the tail's length plus the current call.

- warn when the count reaches `warning_threshold` (10);
- critical when it reaches `critical_threshold` (20) and no side made
  progress: every tail call has a result, and each side always got the same
  result (blocked calls count as the same).

Options: `enabled` only; thresholds come from `loop_detection`.

Flagged: `read(a)`, `list(dir)`, `read(a)`, `list(dir)` … the 10th call of the
alternation -> warn. Not flagged: `read(a)`, `list(dir)`, `read(b)`, `list(dir)`
(the tail breaks at `read(b)`).

Cost: the tail is remembered between calls (`TailMemo`), so a call reads only
the entries added since the last one, not the whole tail; the evidence lists
at most the newest 64 tail entries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from loopguard.detectors.support import NO_OPTIONS
from loopguard.detectors.support.rolling import tier_thresholds
from loopguard.plugin import (
    EVIDENCE_MAX,
    ROLLING,
    ROLLING_SETTINGS,
    TIER_SETTINGS,
    VETO,
    Call,
    Detector,
    HistoryEntry,
    SessionState,
    Vote,
    hookimpl,
    scoped_newest_first,
    short,
    thresholds,
)


class TailMemo:
    """The alternating tail of one run as last seen, kept up to date call by call.

    For each side (signature) it keeps the newest outcome: `refs`, and in
    `breaks` the newest seq of an earlier, different outcome. A side made no
    progress over the tail when its break lies before the tail's oldest entry
    still in the history. Interleaved runs or pending calls make the detector
    walk the tail again, which is always exact.
    """

    __slots__ = (
        "run_id",
        "newest",
        "oldest",
        "sides",
        "refs",
        "last",
        "breaks",
        "exact",
        "evidence",
        "key",
    )

    def __init__(self, run_id: str | None, tail: list[HistoryEntry]) -> None:
        self.run_id = run_id
        self.newest = tail[0].seq
        self.oldest = tail[-1].seq
        self.sides = (tail[0].digest, tail[1].digest)  # (the newest entry's side, the other)
        self.refs: dict[bytes, bytes | None] = {tail[0].digest: None, tail[1].digest: None}
        self.last: dict[bytes, int] = {tail[0].digest: 0, tail[1].digest: 0}
        self.breaks: dict[bytes, int] = {tail[0].digest: 0, tail[1].digest: 0}
        self.exact = True  # False once a pending call was folded in
        self.evidence: tuple[int, ...] | None = None  # set when seqs are not consecutive
        self.key: str | None = None  # the vote's key, once made
        for entry in reversed(tail):
            self.add(entry)

    def add(self, entry: HistoryEntry) -> None:
        """Fold in one more tail entry (oldest first)."""
        outcome, side = entry.outcome, entry.digest
        if outcome is None:
            self.exact = False
        elif outcome != VETO:  # a veto counts as the outcome it blocks
            ref = self.refs[side]
            if ref is not None and ref != outcome:
                self.breaks[side] = self.last[side]
            self.refs[side] = outcome
            self.last[side] = entry.seq

    def length(self, first_seq: int) -> int:
        """Tail entries still in the history (whose oldest entry has seq `first_seq`)."""
        return self.newest - max(self.oldest, first_seq) + 1

    def stalled(self, first_seq: int) -> bool:
        """Every tail entry has an outcome and each side's outcomes are all equal."""
        if not self.exact:
            return False
        return max(self.breaks.values()) < max(self.oldest, first_seq)


class PingPong(Detector):
    id = "ping_pong"
    levels = ("warn", "critical")
    gating = ROLLING
    repeats_only = True  # the call must repeat the one two back
    openclaw_name = "pingPong"
    scratch_codec = "derived"  # the tail memo: rebuilt by walking the history
    settings = ROLLING_SETTINGS + TIER_SETTINGS
    options_schema: ClassVar[dict[str, Any]] = NO_OPTIONS

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        return tier_thresholds(thresholds(config))

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        warning, critical = cfg
        if not self._may_alternate(state, call):
            return None  # the common case: no tail to extend, nothing to remember yet
        memo = self._tail(state, call.run_id)
        if memo is None or call.digest != memo.sides[1]:
            return None
        first = state.history[0].seq
        count = memo.length(first) + 1
        if count < warning and count < critical:
            return None
        key = memo.key
        if key is None:  # (the same for the whole tail: made once)
            key = memo.key = "-".join(sorted((short(memo.sides[0]), short(memo.sides[1]))))
        evidence = self._evidence(state, memo, count - 1)
        other_tool = state.history[-1].tool
        if count >= critical and memo.stalled(first):
            return self.vote(
                "critical",
                count,
                key,
                f"{call.tool} and {other_tool} alternated for {count} calls with "
                "no change in their results.",
                evidence,
            )
        if count >= warning:
            return self.vote(
                "warn",
                count,
                key,
                f"{call.tool} and {other_tool} alternated for {count} calls.",
                evidence,
            )
        return None

    @staticmethod
    def _may_alternate(state: SessionState, call: Call) -> bool:
        """Whether the call repeats the run's second newest call, which differs from the newest."""
        history = state.history
        if len(history) >= 2 and history[-1].run_id == call.run_id == history[-2].run_id:
            newest, other = history[-1].digest, history[-2].digest
            return other == call.digest and newest != other
        entries = scoped_newest_first(state, call.run_id)
        newest_entry, other_entry = next(entries, None), next(entries, None)
        return (
            newest_entry is not None
            and other_entry is not None
            and other_entry.digest == call.digest
            and newest_entry.digest != call.digest
        )

    def _tail(self, state: SessionState, run_id: str | None) -> TailMemo | None:
        """The current tail: the remembered one extended by the entries added since."""
        memo: TailMemo | None = state.scratch.get(self.id)
        history = state.history
        if (
            memo is None
            or not memo.exact
            or memo.run_id != run_id
            or not history
            or history[0].seq > memo.newest
        ):
            return self._rebuild(state, run_id)
        fresh: list[HistoryEntry] = []
        for entry in reversed(history):
            if entry.seq <= memo.newest:
                break
            if entry.run_id != run_id:
                return self._rebuild(state, run_id)  # runs interleave: walk exactly
            fresh.append(entry)
        for entry in reversed(fresh):
            if entry.digest != memo.sides[1]:  # the alternation broke: a new tail
                return self._rebuild(state, run_id)
            memo.add(entry)
            memo.newest = entry.seq
            memo.sides = (memo.sides[1], memo.sides[0])
        return memo if memo.exact else self._rebuild(state, run_id)

    def _rebuild(self, state: SessionState, run_id: str | None) -> TailMemo | None:
        """Walk the tail from the newest entry and remember it."""
        entries = scoped_newest_first(state, run_id)
        newest = next(entries, None)
        other = next(entries, None)
        if newest is None or other is None or other.digest == newest.digest:
            state.scratch.pop(self.id, None)
            return None
        tail: list[HistoryEntry] = [newest, other]
        for entry in entries:
            if entry.digest != tail[-2].digest:
                break
            tail.append(entry)
        memo = TailMemo(run_id, tail)
        if tail[0].seq - tail[-1].seq + 1 != len(tail):
            # Other runs' entries sit in between, so lengths by seq would be wrong: answer
            # from this walk alone (oldest moved so that the length comes out right, breaks
            # folded into "stalled or not") and do not keep the memo.
            stalled = memo.exact and all(b < tail[-1].seq for b in memo.breaks.values())
            memo.oldest = memo.newest - len(tail) + 1
            memo.breaks = dict.fromkeys(memo.breaks, 0 if stalled else memo.newest)
            memo.exact = True
            memo.evidence = tuple(e.seq for e in reversed(tail[:EVIDENCE_MAX]))
            state.scratch.pop(self.id, None)
            return memo
        state.scratch[self.id] = memo
        return memo

    @staticmethod
    def _evidence(state: SessionState, memo: TailMemo, length: int) -> tuple[int, ...]:
        """Sequence numbers of the newest tail entries (at most EVIDENCE_MAX), oldest first."""
        if memo.evidence is not None:
            return memo.evidence
        newest = memo.newest  # a remembered tail is one run's consecutive entries
        return tuple(range(newest - min(length, EVIDENCE_MAX) + 1, newest + 1))


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [PingPong()]
