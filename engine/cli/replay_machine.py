"""The machine-readable report formats of `loopguard replay`: JSON lines and GitHub annotations.

JSON lines keep every record (folded decisions included), each with a
`record` member saying its kind and, for decisions and skipped tools, its
`id` (`FILE#N`). GitHub annotations fold the decisions that continue a loop
after its breaker into one notice, like the text report. Both report every
input problem: an input that could not be read is an `error` record / an
`::error` annotation (as well as a line on stderr), a warning a `warning`.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from loopguard.cli.replay_output import Fold, Totals
from loopguard.findings import Finding
from loopguard.replay.replayer import DROPS_DATA, DecisionRecord, Record, SkippedTool
from loopguard.text.github import escape_data, escape_property


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
            if record.level == "error":  # an input that could not be read (on stderr too)
                self._write({"record": "error", **record.to_dict()})
            else:
                self._write(
                    {
                        "record": "warning",
                        **record.to_dict(),
                        "drops_data": record.code in DROPS_DATA,
                    }
                )
        else:
            self._write(record.to_dict())

    def finish(self) -> None:
        self._write(self.totals.to_dict())


class GithubReport:
    """GitHub Actions workflow commands: one annotation per finding, then the summary line."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.totals = Totals()
        self.folds: dict[
            str, tuple[Fold, DecisionRecord]
        ] = {}  # per session: the fold and its breaker

    def _annotate(self, kind: str, file: str, line: int, title: str, message: str) -> None:
        props = (
            f"file={escape_property(file)}"
            + (f",line={line}" if line else "")
            + f",title={escape_property(title)}"
        )
        print(f"::{kind} {props}::{escape_data(message)}", file=self.out)

    def add(self, record: Record) -> None:
        self.totals.add(record)
        if isinstance(record, DecisionRecord) and record.index:
            fold, breaker = self.folds.get(record.key, (Fold(), record))
            if fold.take(record):
                self.folds[record.key] = (fold, breaker)
                return
            self._folded(record.key)
            self.folds[record.key] = (fold, record)
            d, top = record.decision, record.decision.top
            kind = "warning" if d.action == "warn" else "error"
            message = top.message if top else d.message
            text = f"{d.tool} call {d.seq} (turn {d.turn}): {message} [{record.id}]"
            self._annotate(
                kind, record.file, record.line, f"loopguard {d.action}: {d.detector}", text
            )
        elif isinstance(record, SkippedTool):
            self._annotate(
                "warning",
                record.file,
                record.line,
                "loopguard: skipped required tool",
                f"turn {record.turn}: the model answered without calling {record.call}",
            )
        elif isinstance(record, Finding) and record.level == "error":
            message = record.message + (f"\nhint: {record.hint}" if record.hint else "")
            self._annotate(
                "error", record.file, record.line, "loopguard: unreadable input", message
            )
        elif isinstance(record, Finding):
            self._annotate("warning", record.file, record.line, "loopguard: input", record.message)

    def _folded(self, key: str) -> None:
        fold, breaker = self.folds.get(key, (None, None))
        if fold is not None and breaker is not None and fold.folded:
            text = fold.flush()[0].strip().lstrip("… ")
            self._annotate(
                "notice", breaker.file, breaker.line, "loopguard: the loop went on", text
            )

    def finish(self) -> None:
        for key in list(self.folds):
            self._folded(key)
        print(self.totals.line(), file=self.out)
