"""The text report of `loopguard replay`, and what every report format shares.

Each reporter receives the replay's records one by one (`add`) and writes as
early as it can; `finish` writes the summary. The text report buffers one
session's lines so it can print the session's header (its counts) first.
Once a breaker has closed the tools, the decisions that continue the same
loop (same session, turn, detector and pattern) are folded into one line
(`Fold`); they keep their numbers, so `explain` still finds each. JSON lines
and GitHub annotations live in `replay_machine.py`, the page in
`replay_html.py`.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TextIO

from loopguard.decision import RANK
from loopguard.findings import Finding
from loopguard.replay.replayer import (
    DROPS_DATA,
    DecisionRecord,
    Record,
    SessionSummary,
    SkippedTool,
)

LEGEND = (
    "warn = the call runs and the model gets a note; critical = the call is blocked; "
    "breaker = the call is blocked and tools are closed for the rest of the turn"
)


@dataclass
class Totals:
    """Counts over the whole replay (the last line of every report)."""

    sessions: int = 0
    turns: int = 0
    calls: int = 0
    actions: Counter[str] = field(default_factory=Counter)
    skipped: int = 0
    warnings: int = 0
    dropped: int = 0  # input warnings that mean some input was not fed to the guard
    errors: int = 0
    worst: int = 0  # highest RANK reached by a decision (a skipped required tool counts as warn)

    def add(self, record: Record) -> None:
        if isinstance(record, DecisionRecord):
            self.worst = max(self.worst, RANK.get(record.decision.action, 0))
        elif isinstance(record, SkippedTool):
            self.worst = max(self.worst, RANK["warn"])
        elif isinstance(record, SessionSummary):
            self.sessions += 1
            self.turns += record.turns
            self.calls += record.calls
            self.actions.update(record.actions)
            self.skipped += record.skipped
        elif isinstance(record, Finding):
            if record.level == "error":
                self.errors += 1
            else:
                self.warnings += 1
                self.dropped += record.code in DROPS_DATA

    def failed(self, fail_on: str | None) -> bool:
        """`--fail-on`: a decision at that level, or any input warning that dropped data."""
        return bool(fail_on) and (self.worst >= RANK[str(fail_on)] or self.dropped > 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "record": "summary",
            "sessions": self.sessions,
            "turns": self.turns,
            "calls": self.calls,
            "actions": {a: self.actions.get(a, 0) for a in RANK},
            "skipped_required_tool": self.skipped,
            "input_warnings": self.warnings,
            "input_warnings_dropping_data": self.dropped,
            "input_errors": self.errors,
        }

    def line(self) -> str:
        acts = ", ".join(f"{self.actions.get(a, 0)} {a}" for a in ("warn", "critical", "breaker"))
        return (
            f"summary: {_n(self.sessions, 'session')}, {_n(self.turns, 'turn')}, "
            f"{_n(self.calls, 'tool call')} — {acts}; {_n(self.skipped, 'skipped required tool')}; "
            f"{_n(self.warnings, 'input warning')}"
            + (f" ({self.dropped} dropped data)" if self.dropped else "")
            + (f"; {_n(self.errors, 'unreadable input')}" if self.errors else "")
        )


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def short(text: Any, limit: int = 160) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def where(file: str, line: int) -> str:
    return f"{file}:{line}" if line else file


def position(finding: Finding) -> str:
    """`file:line:col`, the same for errors and warnings (`1:1` for the whole file)."""
    return f"{finding.file}:{max(finding.line, 1)}:{max(finding.col, 1)}"


def loop_of(record: DecisionRecord) -> tuple[Any, ...]:
    """What makes two decisions "the same loop": session, turn, detector and the pattern's key."""
    top = record.decision.top
    return (record.key, record.decision.turn, record.decision.detector, top.key if top else None)


class Fold:
    """Counts the decisions after a breaker that continue its loop, for one summary line."""

    def __init__(self) -> None:
        self.loop: tuple[Any, ...] | None = None
        self.folded: list[int] = []

    def take(self, record: DecisionRecord) -> bool:
        """True when `record` is folded; otherwise the caller shows it (after `flush()`)."""
        loop = loop_of(record)
        if record.after_breaker and loop == self.loop:
            self.folded.append(record.index)
            return True
        self.loop = loop if record.decision.action == "breaker" else None
        return False

    def flush(self) -> list[str]:
        if not self.folded:
            return []
        first, last, count = self.folded[0], self.folded[-1], len(self.folded)
        self.folded = []
        numbers = f"#{first}" if count == 1 else f"#{first}–#{last}"
        return [f"      … and {_n(count, 'more call')} blocked by the same loop ({numbers})"]

    def reset(self) -> list[str]:
        lines, self.loop = self.flush(), None
        return lines


def decision_line(record: DecisionRecord) -> list[str]:
    d = record.decision
    top = d.top
    detector = d.detector or (top.detector if top else "?")
    notes = [f"count {top.count}"] if top else []
    if d.phase == "after":
        notes.append("on its result")
    if d.escalated:
        notes.append("escalated")
    if record.after_breaker:
        notes.append("after a breaker: the recorded agent kept calling")
    head = (
        f"  #{record.index}  {where(record.file, record.line)}  turn {d.turn} call {d.seq}  "
        f"{d.tool}  {d.action.upper()}  {detector} ({', '.join(notes)})"
    )
    return [head, f"      {short(top.message if top else d.message or '')}"]


def skipped_line(record: SkippedTool) -> list[str]:
    what = {
        "no_output": "gave no answer without calling it",
        "plan_only": "only described a plan without calling it",
        "text_only": "answered with text without calling it",
        "other_args": "called it, but never with the required arguments",
    }.get(record.problem, f"{record.problem} without calling it")
    then = (
        f"a retry would have been sent ({record.retries} so far this turn)"
        if record.retry
        else "retries were used up: the answer would carry an 'unreliable' warning"
    )
    matched = f"intent {record.intent}" + (
        f", matched {json.dumps(record.keyword, ensure_ascii=False)} of "
        f"keyword set {record.keyword_set}"
        if record.keyword
        else ""
    )
    lines = [
        f"  #{record.index}  {where(record.file, record.line)}  turn {record.turn}  "
        f"SKIPPED REQUIRED TOOL {record.call}",
        f"      the model {what}; {then}.",
        f"      why required ({matched}): {short(record.reason)}",
    ]
    if record.retry and record.retry_message:
        lines.append(f"      retry message: {short(record.retry_message)}")
    return lines


def session_header(summary: SessionSummary) -> list[str]:
    acts = ", ".join(f"{summary.actions.get(a, 0)} {a}" for a in RANK)
    files = [f for f in summary.files if f != summary.session]
    lines = [
        f"session {summary.session}" + (f" ({', '.join(files)})" if files else ""),
        f"  {_n(summary.turns, 'turn')}, {_n(summary.calls, 'tool call')}: {acts}"
        + (f"; {_n(summary.skipped, 'skipped required tool')}" if summary.skipped else ""),
    ]
    return lines


def session_footer(summary: SessionSummary) -> list[str]:
    if summary.incomplete:
        return [
            "  the file could not be read to the end (see the error above): "
            "the replay stopped there"
        ]
    parts = []
    if summary.ran_despite_block:
        parts.append(
            f"{_n(summary.ran_despite_block, 'call')} that loopguard would have blocked "
            "still ran in the recording"
        )
    if summary.after_breaker:
        parts.append(
            f"{_n(summary.after_breaker, 'call')} came after a breaker had closed the tools"
        )
    if not parts:
        return []
    return [
        f"  note: {'; '.join(parts)}. The replay fed every recorded call to the guard anyway, "
        "so the decisions after the first block show what it would have kept seeing."
    ]


class TextReport:
    """Human-readable report; sessions print when their events are over."""

    def __init__(self, out: TextIO, rules: str) -> None:
        self.out = out
        self.totals = Totals()
        self.pending: dict[str, list[str]] = {}  # per session key: its lines so far
        self.folds: dict[str, Fold] = {}
        self.warnings: list[Finding] = []
        self.errors: list[Finding] = []  # inputs that could not be read (on stderr too)
        print(f"loopguard replay (rules: {rules})", file=out)

    def add(self, record: Record) -> None:
        self.totals.add(record)
        if isinstance(record, DecisionRecord) and record.index:
            fold = self.folds.setdefault(record.key, Fold())
            if not fold.take(record):
                lines = self.pending.setdefault(record.key, [])
                lines.extend(fold.flush())
                lines.extend(decision_line(record))
        elif isinstance(record, SkippedTool):
            lines = self.pending.setdefault(record.key, [])
            lines.extend(self.folds.setdefault(record.key, Fold()).reset())
            lines.extend(skipped_line(record))
        elif isinstance(record, SessionSummary):
            self._session(record)
        elif isinstance(record, Finding) and record.level == "error":
            self.errors.append(record)
        elif isinstance(record, Finding):
            self.warnings.append(record)

    def _session(self, summary: SessionSummary) -> None:
        lines = self.pending.pop(summary.key, [])
        fold = self.folds.pop(summary.key, None)
        lines += fold.flush() if fold else []
        if not lines and not summary.incomplete:
            lines = [
                "  no warnings: every call would have been allowed"
                if summary.calls
                else "  no tool calls in this session"
            ]
        print(
            "", *session_header(summary), *lines, *session_footer(summary), sep="\n", file=self.out
        )

    def finish(self) -> None:
        if self.errors:
            print(f"\ninput errors ({len(self.errors)}):", file=self.out)
            for finding in self.errors:
                print(f"  {position(finding)}: {finding.message}", file=self.out)
        if self.warnings:
            print(f"\ninput warnings ({len(self.warnings)}):", file=self.out)
            for finding in self.warnings:
                dropped = " [dropped data]" if finding.code in DROPS_DATA else ""
                print(f"  {position(finding)}: {finding.message}{dropped}", file=self.out)
        print("", self.totals.line(), sep="\n", file=self.out)
        if sum(self.totals.actions.get(a, 0) for a in ("warn", "critical", "breaker")):
            print(f"  ({LEGEND})", file=self.out)
