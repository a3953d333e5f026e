"""The records a replay yields: decisions, skipped required tools, session summaries.

Every report format (text, JSON lines, GitHub annotations, HTML) and
`explain` read these, so there is one representation of what happened.
Decisions that are not `allow` and skipped required tools are numbered per
input file, 1, 2, 3 …; `FILE#N` (`id`) names one for `loopguard explain`
and stays the same whatever other files are replayed alongside.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from loopguard.decision import RANK, Decision
from loopguard.findings import Finding

# Input warnings that mean part of the input was not fed to the guard: under
# `--fail-on` they fail the run, since a gate that skipped data checked less. A trace whose
# tool arguments or results were not captured (`content-not-captured`) checked less too.
DROPS_DATA = frozenset(
    {
        "bad-line",
        "truncated-line",
        "bad-message",
        "bad-call",
        "bad-event",
        "orphan-result",
        "content-not-captured",
    }
)


def record_id(file: str, index: int) -> str:
    """`FILE#N`, the stable id of the Nth numbered record of a file."""
    return f"{file}#{index}"


@dataclass(frozen=True)
class DecisionRecord:
    """One guard decision at one spot of the input.

    `index` numbers the non-allow ones (1-based, per file).
    """

    index: int
    session: str
    file: str
    line: int
    decision: Decision
    after_breaker: bool = False  # a breaker had already closed the tools in this turn
    args: Any = None
    key: str = field(default="", compare=False)  # the replay's key of the session (see `Replayer`)

    @property
    def id(self) -> str:
        return record_id(self.file, self.index) if self.index else ""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "record": "decision",
            "id": self.id,
            "index": self.index,
            "session": self.session,
            "file": self.file,
            "line": self.line,
        }
        data.update(self.decision.to_dict())
        data["after_breaker"] = self.after_breaker
        return data


@dataclass(frozen=True)
class SkippedTool:
    """The model answered with text while a required tool was never called."""

    session: str
    file: str
    line: int
    turn: int
    call: str  # the exact call that was required, e.g. portfolio(mode="diagnose")
    tool: str
    reason: str
    problem: str  # "no_output" | "plan_only" | "text_only" | "other_args"
    retry: bool  # a runtime would have sent a retry message
    retries: int  # retries used in this turn, this one included
    retry_message: str | None = None
    index: int = 0  # numbered with the decisions of its file
    intent: str = ""  # the id of the intent that required the tool
    keyword: str = ""  # the keyword of the user's message that matched, and its set
    keyword_set: str = ""
    user_text: str = ""
    key: str = field(default="", compare=False)

    @property
    def id(self) -> str:
        return record_id(self.file, self.index) if self.index else ""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"record": "skipped_required_tool", "id": self.id}
        data.update({k: getattr(self, k) for k in self.__dataclass_fields__ if k != "key"})
        return data


@dataclass
class SessionSummary:
    """Counts for one session, emitted when its events are over."""

    session: str
    files: list[str] = field(default_factory=list)
    turns: int = 0
    calls: int = 0
    actions: Counter[str] = field(default_factory=Counter)  # per call: the worse of before/after
    skipped: int = 0
    retries: int = 0
    ran_despite_block: int = 0  # calls the guard would have blocked, yet the recording ran them
    after_breaker: int = 0  # recorded calls made after a breaker had closed the tools
    warnings: int = 0
    incomplete: bool = False  # its file could not be read to the end
    key: str = field(default="", compare=False)  # the replay's key of the session

    def to_dict(self) -> dict[str, Any]:
        return {
            "record": "session",
            "session": self.session,
            "files": self.files,
            "turns": self.turns,
            "calls": self.calls,
            "actions": {a: self.actions.get(a, 0) for a in RANK},
            "skipped_required_tool": self.skipped,
            "retries": self.retries,
            "ran_despite_block": self.ran_despite_block,
            "after_breaker": self.after_breaker,
            "warnings": self.warnings,
            "incomplete": self.incomplete,
        }


Record = DecisionRecord | SkippedTool | SessionSummary | Finding
