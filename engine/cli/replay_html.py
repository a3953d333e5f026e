"""`loopguard replay --format html -o report.html`: the replay as one self-contained page.

No network and no external assets: the styles and the script are inline,
the data is one JSON island. The page has a summary table of every session
(turns, calls, each action, skipped required tools, input warnings) and, per
session, a timeline of its calls, one cell per call coloured by its
decision (allow, warn, critical, breaker; skipped required tools in
between); hovering a cell shows the call, clicking it shows every vote
with its evidence. The script renders the timelines from the data, so the
page works from a file on disk. A session's timeline keeps its first
`MAX_CELLS` calls and says how many more there were.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any, TextIO

from loopguard.cli.replay_output import Totals, position, short
from loopguard.decision import RANK
from loopguard.findings import Finding
from loopguard.replay.replayer import DecisionRecord, Record, SessionSummary, SkippedTool

MAX_CELLS = 5000


def _call(record: DecisionRecord) -> dict[str, Any]:
    d = record.decision
    votes = [
        {
            "detector": v.detector,
            "level": v.level,
            "count": v.count,
            "message": v.message,
            "evidence": list(v.evidence),
        }
        for v in d.votes
    ]
    args = (
        record.args
        if isinstance(record.args, str)
        else json.dumps(record.args, ensure_ascii=False, sort_keys=True, default=str)
    )
    return {
        "seq": d.seq,
        "turn": d.turn,
        "tool": d.tool,
        "action": d.action,
        "detector": d.detector or "",
        "id": record.id,
        "where": f"{record.file}:{record.line}",
        "args": short(args, 300),
        "after_breaker": record.after_breaker,
        "votes": votes,
    }


class HtmlReport:
    """Collects the replay's records per session and writes the page at the end."""

    def __init__(self, out: TextIO, rules: str) -> None:
        self.out = out
        self.rules = rules
        self.totals = Totals()
        self.open: dict[str, dict[str, Any]] = {}
        self.sessions: list[dict[str, Any]] = []
        self.problems: list[dict[str, str]] = []

    def _session(self, key: str) -> dict[str, Any]:
        return self.open.setdefault(key, {"cells": [], "more": 0, "by_seq": {}})

    def add(self, record: Record) -> None:
        self.totals.add(record)
        if isinstance(record, DecisionRecord):
            self._decision(record)
        elif isinstance(record, SkippedTool):
            cells = self._session(record.key)["cells"]
            if len(cells) < MAX_CELLS:
                cells.append(
                    {
                        "skipped": True,
                        "turn": record.turn,
                        "id": record.id,
                        "call": record.call,
                        "where": f"{record.file}:{record.line}",
                        "intent": record.intent,
                        "keyword": record.keyword,
                        "reason": short(record.reason, 300),
                    }
                )
        elif isinstance(record, SessionSummary):
            data = self.open.pop(record.key, None) or {"cells": [], "more": 0, "by_seq": {}}
            data.pop("by_seq")
            data.update(record.to_dict())
            self.sessions.append(data)
        elif isinstance(record, Finding):
            self.problems.append(
                {"level": record.level, "where": position(record), "message": record.message}
            )

    def _decision(self, record: DecisionRecord) -> None:
        state = self._session(record.key)
        seq = record.decision.seq
        cell = state["by_seq"].get(seq)
        if cell is None:  # the check before the call: a new cell
            if len(state["cells"]) >= MAX_CELLS:
                state["more"] += 1
                return
            cell = state["by_seq"][seq] = _call(record)
            state["cells"].append(cell)
            if len(state["by_seq"]) > 64:
                state["by_seq"].pop(next(iter(state["by_seq"])))
        elif RANK.get(record.decision.action, 0) > RANK.get(
            cell["action"], 0
        ):  # its result made it worse
            cell.update(_call(record), seq=seq)

    def finish(self) -> None:
        data = {
            "rules": self.rules,
            "summary": self.totals.to_dict(),
            "sessions": self.sessions,
            "problems": self.problems,
        }
        island = json.dumps(data, ensure_ascii=False, default=str).replace("<", "\\u003c")
        page = resources.files("loopguard.cli").joinpath("replay_page.html").read_text("utf-8")
        self.out.write(
            page.replace("{{TITLE}}", html.escape(f"loopguard replay ({self.rules})")).replace(
                "{{DATA}}", island
            )
        )
