"""unknown_tool_repeat — calling a tool that does not exist, again and again.

A rolling detector: runs only when `loop_detection.enabled` is true.

A failed call is an unknown-tool failure when its error text matches one of `patterns`
(case-insensitive regular expressions; a named group `name` captures the missing tool's name), or
when `known_tools` is non-empty and the called tool is not in it. The engine classifies each failure
so before the detectors see it (`loopguard.detection.marks`, from these two options, which
the schema marks); this detector reads `HistoryEntry.unknown`. Walking back from the newest call of
the run, it counts consecutive unknown-tool failures of the current call's tool naming the same
unknown tool (the arguments may differ), and stops at anything else. A call of that tool the guard
blocked continues the streak (blocking never resets escalation), so a blocked retry stays
blocked.

- critical when that streak reaches `unknown_tool_threshold` (10). No warn tier.

Options (their defaults are in the options schema): `patterns` (error texts naming the
missing tool), `known_tools` (empty: not used).

Flagged: `serach` failing with "Unknown tool: serach" 10 times in a row, the
11th call -> critical. Not flagged: 10 failures broken by one success.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from typing import Any, ClassVar

from loopguard.plugin import (
    EVIDENCE_MAX,
    MAX_PATTERN_CHARS,
    ROLLING,
    ROLLING_SETTINGS,
    VETO,
    Call,
    Detector,
    HistoryEntry,
    SessionState,
    Vote,
    hookimpl,
    thresholds,
)


class UnknownToolRepeat(Detector):
    id = "unknown_tool_repeat"
    levels = ("critical",)
    gating = ROLLING
    openclaw_name = "unknownToolRepeat"
    settings = (*ROLLING_SETTINGS, "loop_detection.unknown_tool_threshold")
    explain_options = ()  # its patterns are long; the threshold explains a vote
    scratch_codec = "derived"  # the streak memo: rebuilt by walking the history
    reads_unknown_tools = True  # the engine classifies failures by the options marked below
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "patterns": {
                "description": "Regular expressions (Python `regex` syntax, "
                "case-insensitive) that find an unknown-tool error in a "
                "result; the group `name` captures the tool.",
                "type": "array",
                "x-loopguard-unknown-tool-patterns": True,
                "items": {
                    "type": "string",
                    "x-loopguard-regex": True,
                    "minLength": 1,
                    "maxLength": MAX_PATTERN_CHARS,
                },
                "default": [
                    r"unknown tool:?\s*(?P<name>[\w.\-]+)",
                    r"""tool\s+[`"']?(?P<name>[\w.\-]+)[`"']?\s+not found""",
                    r"""tool\s+[`"']?(?P<name>[\w.\-]+)[`"']?\s+is not available""",
                ],
            },
            "known_tools": {
                "description": "Tools that exist even when a result says otherwise.",
                "type": "array",
                "x-loopguard-known-tools": True,
                "items": {"type": "string", "minLength": 1},
                "default": [],
            },
        },
        "additionalProperties": False,
    }

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        return (int(thresholds(config)["unknown_tool_threshold"]),)

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        threshold = cfg[0]
        streak = self._streak(state, call.run_id)
        if streak is None or streak.tool != call.tool or streak.name is None:
            return None
        count = streak.count(state.history[0].seq)
        if count < threshold:
            return None
        evidence = tuple(streak.seqs[-EVIDENCE_MAX:])
        return self.vote(
            "critical",
            count,
            f"{call.tool}:{streak.name}",
            f"{call.tool} failed {count} times in a row: tool {streak.name!r} does not exist.",
            evidence,
        )

    def _streak(self, state: SessionState, run_id: str | None) -> Streak | None:
        """The streak ending at the newest entry, folding in only entries added since last time."""
        memo: Streak | None = state.scratch.get(self.id)
        if memo is None or memo.run_id != run_id:
            memo = Streak(run_id)
        newest = state.history[-1] if state.history else None
        if (
            newest is not None
            and newest.run_id == run_id
            and newest.outcome is not None
            and newest.outcome != VETO
            and newest.unknown is None
        ):
            # The common case: the newest call completed and is not an unknown-tool
            # failure, so no streak runs through it; start afresh after it in O(1).
            if memo.tool is not None or memo.seqs:
                memo = Streak(run_id)
            memo.upto = newest.seq
            state.scratch[self.id] = memo
            return None
        if (
            newest is not None
            and newest.seq == memo.upto + 1
            and newest.run_id == run_id
            and newest.outcome is not None
        ):  # only the newest is new, and complete (a blocked retry): fold it alone
            memo.fold_all([newest], state.history[0].seq)
            state.scratch[self.id] = memo
            return memo
        fresh: list[HistoryEntry] = []
        for entry in reversed(state.history):
            if entry.seq <= memo.upto:
                break
            if entry.run_id == run_id:
                fresh.append(entry)
            elif memo.upto:  # another run's entry since the memo: fold again from scratch
                memo, fresh = (
                    Streak(run_id),
                    [e for e in reversed(state.history) if e.run_id == run_id],
                )
                break
        first = state.history[0].seq if state.history else 0
        pending = [i for i, entry in enumerate(fresh) if entry.outcome is None]
        if pending:  # the walk from the newest stops at the newest pending entry
            memo.fold_all(fresh[pending[-1] + 1 :], first)
            state.scratch[self.id] = memo
            probe = Streak(run_id)
            probe.fold_all(fresh[: pending[0]], first)
            return probe
        memo.fold_all(fresh, first)
        state.scratch[self.id] = memo
        return memo


class Streak:
    """Consecutive unknown-tool failures (and blocked retries) of one tool, oldest first.

    Folding entries oldest-first gives what the newest-first walk
    gives: the newest named failure sets the name, vetoes count, anything
    else ends the streak. Entries that fall out of the history stop counting.
    """

    __slots__ = ("run_id", "upto", "tool", "name", "named", "seqs", "vetoes")

    def __init__(self, run_id: str | None) -> None:
        self.run_id = run_id
        self.upto = 0  # newest seq folded in
        self.tool: str | None = None
        self.name: str | None = None
        self.named = 0  # seq of the newest named failure
        self.seqs: list[int] = []  # the streak's entries (bounded by the history size)
        self.vetoes = 0  # blocked retries since the newest named failure

    def fold_all(self, newest_first: list[HistoryEntry], first_seq: int) -> None:
        for entry in reversed(newest_first):
            self.fold(entry)
        if self.seqs and self.seqs[0] < first_seq:  # keep only what the history still holds
            del self.seqs[: bisect_left(self.seqs, first_seq)]

    def fold(self, entry: HistoryEntry) -> None:
        self.upto = entry.seq
        if entry.tool != self.tool:
            self.tool, self.name, self.named, self.seqs, self.vetoes = entry.tool, None, 0, [], 0
        if entry.outcome == VETO:
            self.seqs.append(entry.seq)
            self.vetoes += 1
        elif entry.unknown is not None:
            if self.name is not None and entry.unknown != self.name:
                # Another missing tool: the streak restarts here, keeping the blocked
                # retries just before it (a newest-first walk reads them first).
                # (the vetoes still held: `fold_all` drops seqs that left the history)
                self.seqs = self.seqs[max(0, len(self.seqs) - self.vetoes) :]
            self.seqs.append(entry.seq)
            self.name, self.named, self.vetoes = entry.unknown, entry.seq, 0
        else:  # a success or another error ends any streak
            self.name, self.named, self.seqs, self.vetoes = None, 0, [], 0

    def count(self, first_seq: int) -> int:
        """Streak entries still in the history; 0 when its named failure has left it."""
        if self.name is None or self.named < first_seq:
            return 0
        return len(self.seqs) - bisect_left(self.seqs, first_seq)


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [UnknownToolRepeat()]
