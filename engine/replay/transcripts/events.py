"""Normalised transcript events: what every reader turns its format into.

A reader (a `Format` module) is given an opened `Transcript` and yields these records in
file order. Each carries the session it belongs to, the optional run id, and where it came
from (file and 1-based line), so the replay report can point at the exact spot in the
input. A reader builds them, and the tool calls they carry, through its `Context`, which
holds that place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Protocol, TypeVar

from loopguard.findings import Finding
from loopguard.replay.transcripts.source import Source, warning
from loopguard.text import jsontext
from loopguard.text.content import parts_text


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call requested by the model. `arguments` is kept as recorded:
    a mapping, or the raw JSON string when it could not be parsed."""

    id: str
    name: str
    arguments: Any = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Event:
    """What every event carries: its session, and (by keyword) its run and place in the input."""

    session: str
    _: KW_ONLY
    run_id: str | None = None
    file: str = ""
    line: int = 0


@dataclass(frozen=True, slots=True)
class SystemMessage(_Event):
    """A system or developer instruction (only used as intent context)."""

    text: str


@dataclass(frozen=True, slots=True)
class UserMessage(_Event):
    """A message written by the user; each one starts a turn."""

    text: str


@dataclass(frozen=True, slots=True)
class AssistantMessage(_Event):
    """One model reply: its text and the tool calls it asked for."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolResult(_Event):
    """What a tool returned (or the error text when `is_error`)."""

    call_id: str
    name: str | None
    content: Any
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class Compaction(_Event):
    """The host compacted the context here and went on."""


@dataclass(frozen=True, slots=True)
class EndOfSession(_Event):
    """No more events for this session (lets the replay free its state early)."""


Event = SystemMessage | UserMessage | AssistantMessage | ToolResult | Compaction | EndOfSession
Stream = Iterator["Event | Finding"]
_E = TypeVar("_E", bound=_Event)


class Format(Protocol):
    """What a reader module declares (`detect.READERS` lists them)."""

    NAME: str  # what `--input-format` takes
    LABEL: str  # the format's name in messages
    MARKERS: str  # a regex of what only this format writes, counted in a file's head

    def read(self, transcript: Transcript) -> Stream: ...


@dataclass
class Transcript:
    """An opened input file: its format's reader (detected or forced) and its layout."""

    source: Source
    reader: Format
    layout: str  # "jsonl" or "document"
    # the one generic format whose own markers an element carries, if any (from `READERS`)
    claimed_by: Callable[[Any], str | None]

    @property
    def format(self) -> str:
        return self.reader.NAME

    @property
    def label(self) -> str:
        return self.reader.LABEL

    def events(self) -> Stream:
        return self.reader.read(self)


@dataclass(slots=True)
class Context:
    """Where the element being read lives (a reader moves it along), and the events built there."""

    session: str
    file: str
    line: int
    run_id: str | None = None

    def _event(self, kind: type[_E], *fields: Any) -> _E:
        return kind(self.session, *fields, run_id=self.run_id, file=self.file, line=self.line)

    def system(self, text: str) -> SystemMessage:
        return self._event(SystemMessage, text)

    def user(self, text: str) -> UserMessage:
        return self._event(UserMessage, text)

    def reply(self, text: str, calls: tuple[ToolCall, ...] = ()) -> AssistantMessage:
        return self._event(AssistantMessage, text, calls)

    def result(
        self, call_id: str, content: Any, failed: bool = False, name: str | None = None
    ) -> ToolResult:
        return self._event(ToolResult, call_id, name, content, failed)

    def compaction(self) -> Compaction:
        return self._event(Compaction)

    def end(self) -> EndOfSession:
        return self._event(EndOfSession)

    def warning(self, message: str, code: str, hint: str = "") -> Finding:
        return warning(self.file, self.line, message, code, hint)

    def call_id(self, recorded: Any, index: int) -> str:
        """A call's recorded id, else one made from its place: `call@<line>.<number>`."""
        return str(recorded or f"call@{self.line}.{index + 1}")

    def arguments(self, raw: Any, call_id: str, tool: str) -> tuple[Any, Finding | None]:
        """Recorded arguments as a value; invalid JSON stays raw text, with a warning."""
        if not isinstance(raw, str):
            return ({} if raw is None else raw), None
        if not raw.strip():
            return {}, None
        try:
            return jsontext.loads(raw), None
        except (ValueError, RecursionError):
            note = self.warning(
                f"the arguments of call {call_id} ({tool}) are not valid JSON; "
                "replayed as raw text",
                "bad-arguments",
            )
            return raw, note

    def reply_calling(self, text: str, raw_calls: list[Any], nested: bool) -> Stream:
        """The warnings about an assistant message's recorded calls, then its reply."""
        calls, notes = self.tool_calls(raw_calls, nested)
        yield from notes
        yield self.reply(text, tuple(calls))

    def tool_calls(
        self, raw_calls: list[Any], nested: bool
    ) -> tuple[list[ToolCall], list[Finding]]:
        """An assistant message's recorded calls, and the warnings about them.

        Each call is `{id, name, arguments}`, or with `nested` the Chat shape
        `{id, function: {name, arguments}}`; a call without a name is skipped.
        """
        calls: list[ToolCall] = []
        notes: list[Finding] = []
        for index, raw in enumerate(raw_calls):
            body = raw.get("function") if nested and isinstance(raw, dict) else raw
            if not isinstance(body, dict) or not isinstance(body.get("name"), str):
                what = "function name" if nested else "name"
                notes.append(
                    self.warning(f"tool call #{index + 1} has no {what}; skipped", "bad-call")
                )
                continue
            call_id = self.call_id(raw.get("id"), index)
            args, note = self.arguments(body.get("arguments"), call_id, body["name"])
            if note is not None:
                notes.append(note)
            calls.append(ToolCall(call_id, body["name"], args))
        return calls, notes


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
