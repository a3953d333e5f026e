"""The three report formats of `loopguard replay`: text, json (JSON lines) and github.

Each reporter receives the replay's records one by one (`add`) and writes as
early as it can; `finish` writes the summary. The text report buffers one
session's lines so it can print the session's header (its counts) first.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TextIO

from ..decision import RANK
from ..findings import Finding
from ..replay import DecisionRecord, Record, SessionSummary, SkippedTool

LEGEND = ("warn = the call runs and the model gets a note; critical = the call is blocked; "
          "breaker = the call is blocked and tools are closed for the rest of the turn")


@dataclass
class Totals:
    """Counts over the whole replay (the last line of every report)."""

    sessions: int = 0
    turns: int = 0
    calls: int = 0
    actions: Counter[str] = field(default_factory=Counter)
    skipped: int = 0
    warnings: int = 0
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

    def to_dict(self) -> dict[str, Any]:
        return {"record": "summary", "sessions": self.sessions, "turns": self.turns, "calls": self.calls,
                "actions": {a: self.actions.get(a, 0) for a in RANK}, "skipped_required_tool": self.skipped,
                "input_warnings": self.warnings, "input_errors": self.errors}

    def line(self) -> str:
        acts = ", ".join(f"{self.actions.get(a, 0)} {a}" for a in ("warn", "critical", "breaker"))
        return (f"summary: {_n(self.sessions, 'session')}, {_n(self.turns, 'turn')}, "
                f"{_n(self.calls, 'tool call')} — {acts}; {_n(self.skipped, 'skipped required tool')}; "
                f"{_n(self.warnings, 'input warning')}" + (f"; {_n(self.errors, 'unreadable input')}" if self.errors else ""))


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def short(text: Any, limit: int = 160) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def where(file: str, line: int) -> str:
    return f"{file}:{line}" if line else file


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
    head = (f"  #{record.index}  {where(record.file, record.line)}  turn {d.turn} call {d.seq}  {d.tool}  "
            f"{d.action.upper()}  {detector} ({', '.join(notes)})")
    return [head, f"      {short(top.message if top else d.message or '')}"]


def skipped_line(record: SkippedTool) -> list[str]:
    what = {"no_output": "gave no answer", "plan_only": "only described a plan",
            "text_only": "answered with text"}.get(record.problem, record.problem)
    then = (f"a retry would have been sent ({record.retries} so far this turn)" if record.retry
            else "retries were used up: the answer would carry an 'unreliable' warning")
    lines = [f"  -   {where(record.file, record.line)}  turn {record.turn}  SKIPPED REQUIRED TOOL {record.call}",
             f"      the model {what} without calling it; {then}.",
             f"      why required: {short(record.reason)}"]
    if record.retry and record.retry_message:
        lines.append(f"      retry message: {short(record.retry_message)}")
    return lines


def session_header(summary: SessionSummary) -> list[str]:
    acts = ", ".join(f"{summary.actions.get(a, 0)} {a}" for a in RANK)
    files = [f for f in summary.files if f != summary.session]
    lines = [f"session {summary.session}" + (f" ({', '.join(files)})" if files else ""),
             f"  {_n(summary.turns, 'turn')}, {_n(summary.calls, 'tool call')}: {acts}"
             + (f"; {_n(summary.skipped, 'skipped required tool')}" if summary.skipped else "")]
    return lines


def session_footer(summary: SessionSummary) -> list[str]:
    parts = []
    if summary.ran_despite_block:
        parts.append(f"{_n(summary.ran_despite_block, 'call')} that loopguard would have blocked still ran in "
                     "the recording")
    if summary.after_breaker:
        parts.append(f"{_n(summary.after_breaker, 'call')} came after a breaker had closed the tools")
    if not parts:
        return []
    return [f"  note: {'; '.join(parts)}. The replay fed every recorded call to the guard anyway, so the "
            "decisions after the first block show what it would have kept seeing."]


class TextReport:
    """Human-readable report; sessions print when their events are over."""

    def __init__(self, out: TextIO, rules: str) -> None:
        self.out = out
        self.totals = Totals()
        self.pending: list[str] = []
        self.warnings: list[Finding] = []
        print(f"loopguard replay (rules: {rules})", file=out)

    def add(self, record: Record) -> None:
        self.totals.add(record)
        if isinstance(record, DecisionRecord) and record.index:
            self.pending.extend(decision_line(record))
        elif isinstance(record, SkippedTool):
            self.pending.extend(skipped_line(record))
        elif isinstance(record, SessionSummary):
            body = self.pending or ["  no warnings: every call would have been allowed"]
            print("", *session_header(record), *body, *session_footer(record), sep="\n", file=self.out)
            self.pending = []
        elif isinstance(record, Finding) and record.level != "error":
            self.warnings.append(record)

    def finish(self) -> None:
        if self.warnings:
            print(f"\ninput warnings ({len(self.warnings)}):", file=self.out)
            for finding in self.warnings:
                print(f"  {where(finding.file, finding.line)}: {finding.message}", file=self.out)
        print("", self.totals.line(), sep="\n", file=self.out)
        if sum(self.totals.actions.get(a, 0) for a in ("warn", "critical", "breaker")):
            print(f"  ({LEGEND})", file=self.out)


class JsonReport:
    """JSON lines: one object per record, each with a `record` member saying its kind."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.totals = Totals()

    def _write(self, data: dict[str, Any]) -> None:
        self.out.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")

    def add(self, record: Record) -> None:
        self.totals.add(record)
        if isinstance(record, DecisionRecord):
            if record.index:
                self._write(record.to_dict())
        elif isinstance(record, Finding):
            if record.level != "error":
                self._write({"record": "warning", **record.to_dict()})
        else:
            self._write(record.to_dict())

    def finish(self) -> None:
        self._write(self.totals.to_dict())


def _escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


class GithubReport:
    """GitHub Actions workflow commands: one annotation per finding, then the summary line."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.totals = Totals()

    def _annotate(self, kind: str, file: str, line: int, title: str, message: str) -> None:
        props = f"file={_escape(file, True)}" + (f",line={line}" if line else "") + f",title={_escape(title, True)}"
        print(f"::{kind} {props}::{_escape(message)}", file=self.out)

    def add(self, record: Record) -> None:
        self.totals.add(record)
        if isinstance(record, DecisionRecord) and record.index:
            d, top = record.decision, record.decision.top
            kind = "warning" if d.action == "warn" else "error"
            text = f"{d.tool} call {d.seq} (turn {d.turn}): {top.message if top else d.message}"
            self._annotate(kind, record.file, record.line, f"loopguard {d.action}: {d.detector}", text)
        elif isinstance(record, SkippedTool):
            self._annotate("warning", record.file, record.line, "loopguard: skipped required tool",
                           f"turn {record.turn}: the model answered without calling {record.call}")
        elif isinstance(record, Finding) and record.level != "error":
            self._annotate("warning", record.file, record.line, "loopguard: input", record.message)

    def finish(self) -> None:
        print(self.totals.line(), file=self.out)
