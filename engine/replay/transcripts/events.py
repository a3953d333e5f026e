"""Normalised transcript events: what every reader turns its format into.

A reader yields these records in file order. Each carries the session it
belongs to, the optional run id, and where it came from (file and 1-based
line), so the replay report can point at the exact spot in the input. A
reader builds them through its `Context`, which holds that place.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from loopguard.findings import Finding
from loopguard.replay.transcripts.source import warning
from loopguard.text.content import parts_text


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call requested by the model. `arguments` is kept as recorded:
    a mapping, or the raw JSON string when it could not be parsed."""

    id: str
    name: str
    arguments: Any = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SystemMessage:
    """A system or developer instruction (only used as intent context)."""

    session: str
    text: str
    run_id: str | None = None
    file: str = ""
    line: int = 0


@dataclass(frozen=True, slots=True)
class UserMessage:
    """A message written by the user; each one starts a turn."""

    session: str
    text: str
    run_id: str | None = None
    file: str = ""
    line: int = 0


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """One model reply: its text and the tool calls it asked for."""

    session: str
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    run_id: str | None = None
    file: str = ""
    line: int = 0


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returned (or the error text when `is_error`)."""

    session: str
    call_id: str
    name: str | None
    content: Any
    is_error: bool = False
    run_id: str | None = None
    file: str = ""
    line: int = 0


@dataclass(frozen=True, slots=True)
class Compaction:
    """The host compacted the context here and went on."""

    session: str
    run_id: str | None = None
    file: str = ""
    line: int = 0


@dataclass(frozen=True, slots=True)
class EndOfSession:
    """No more events for this session (lets the replay free its state early)."""

    session: str
    file: str = ""
    line: int = 0


Event = SystemMessage | UserMessage | AssistantMessage | ToolResult | Compaction | EndOfSession
Stream = Iterator["Event | Finding"]


@dataclass(slots=True)
class Context:
    """Where the element being read lives (a reader moves it along), and the events built there."""

    session: str
    file: str
    line: int
    run_id: str | None = None

    def system(self, text: str) -> SystemMessage:
        return SystemMessage(self.session, text, self.run_id, self.file, self.line)

    def user(self, text: str) -> UserMessage:
        return UserMessage(self.session, text, self.run_id, self.file, self.line)

    def reply(self, text: str, calls: tuple[ToolCall, ...] = ()) -> AssistantMessage:
        return AssistantMessage(self.session, text, calls, self.run_id, self.file, self.line)

    def result(
        self, call_id: str, content: Any, failed: bool = False, name: str | None = None
    ) -> ToolResult:
        return ToolResult(
            self.session, call_id, name, content, failed, self.run_id, self.file, self.line
        )

    def compaction(self) -> Compaction:
        return Compaction(self.session, self.run_id, self.file, self.line)

    def end(self) -> EndOfSession:
        return EndOfSession(self.session, self.file, self.line)

    def warning(self, message: str, code: str, hint: str = "") -> Finding:
        return warning(self.file, self.line, message, code, hint)

    def call_id(self, recorded: Any, index: int) -> str:
        """A call's recorded id, else one made from its place: `call@<line>.<number>`."""
        return str(recorded or f"call@{self.line}.{index + 1}")


def transcript_text(content: Any) -> str:
    """The plain text of a message content: a string, a text block, or the text parts of a
    list of blocks (bare strings count as text parts), joined as the runtime joins them."""
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    if isinstance(content, list):
        content = [{"type": "text", "text": b} if isinstance(b, str) else b for b in content]
    return parts_text(content)


def result_content(content: Any) -> Any:
    """A tool result's content: a list of parts as its transcript text, anything else as is."""
    return transcript_text(content) if isinstance(content, list) else content
