"""Reader of OpenAI Responses API items.

Items: `message` (role user/assistant/system/developer, content as text or
`input_text`/`output_text` parts; the short `{"role", "content"}` form too),
`function_call` (`call_id`, `name`, `arguments` as a JSON string),
`function_call_output` (`call_id`, `output`), `custom_tool_call` /
`custom_tool_call_output` (raw `input` text), and `compaction` items. An
assistant message and the function calls that follow it form one model reply.
`reasoning` items are skipped. Containers: an array of items, an object with
`input` and/or `output` (a logged request and response), or JSONL; see
`conversation.py`. The object's `instructions` member is system context.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from loopguard.replay.transcripts.conversation import no_events, read_conversations, system_context
from loopguard.replay.transcripts.events import (
    Context,
    Stream,
    ToolCall,
    Transcript,
    result_content,
    transcript_text,
)

NAME = "openai-responses"
LABEL = "OpenAI Responses"
MARKERS = (
    r'"type"\s*:\s*"(?:function_call|function_call_output|reasoning|custom_tool_call|input_text|'
    r'output_text)"|"call_id"\s*:'
)
_SKIPPED = frozenset({"reasoning", "web_search_call", "file_search_call", "item_reference"})
_TYPES = frozenset(
    {
        "function_call",
        "function_call_output",
        "reasoning",
        "custom_tool_call",
        "custom_tool_call_output",
        "web_search_call",
        "file_search_call",
    }
)
_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file"})


def type_of(value: Any) -> str | None:
    """A `type` field as text; anything else (a list, a number) names no known type."""
    return value if isinstance(value, str) else None


def claims(obj: Any) -> bool:
    """True for items only the Responses format has."""
    if not isinstance(obj, dict) or "event" in obj:
        return False
    if type_of(obj.get("type")) in _TYPES:
        return True
    content = obj.get("content")
    return isinstance(content, list) and any(
        isinstance(part, dict) and type_of(part.get("type")) in _PARTS for part in content
    )


def read(transcript: Transcript) -> Stream:
    return read_conversations(transcript, ("input", "output", "items"), ResponsesTranslator)


class ResponsesTranslator:
    """Groups an assistant message with the function calls that follow it."""

    def __init__(self) -> None:
        self._text: str | None = None
        self._calls: list[ToolCall] = []
        self._where: tuple[str, int] = ("", 0)

    def field(self, key: str, value: Any, ctx: Context) -> Stream:
        if key == "instructions" and isinstance(value, str):
            return system_context(value, ctx)
        return no_events(ctx)

    def flush(self, ctx: Context) -> Stream:
        if self._text is not None or self._calls:
            file, line = self._where
            yield replace(ctx, file=file, line=line).reply(self._text or "", tuple(self._calls))
        self._text, self._calls = None, []

    def _start_reply(self, ctx: Context) -> None:
        if self._text is None and not self._calls:
            self._where = (ctx.file, ctx.line)

    def message(self, obj: dict[str, Any], ctx: Context) -> Stream:
        kind = type_of(obj.get("type", "message"))
        role = obj.get("role")
        if kind in _SKIPPED:
            return  # reasoning between a reply's parts does not end the reply
        if kind in ("function_call", "custom_tool_call"):
            self._start_reply(ctx)
            yield from self._call(obj, ctx, custom=kind == "custom_tool_call")
            return
        if kind == "message" and role == "assistant" and not self._calls:
            self._start_reply(ctx)
            text = transcript_text(obj.get("content"))
            self._text = text if self._text is None else self._text + "\n" + text
            return
        yield from self.flush(ctx)
        if kind in ("function_call_output", "custom_tool_call_output"):
            yield ctx.result(
                str(obj.get("call_id") or ""),
                result_content(obj.get("output")),
                bool(obj.get("is_error")),
            )
        elif kind == "compaction":
            yield ctx.compaction()
        elif kind == "message" and role == "assistant":
            self._start_reply(ctx)
            self._text = transcript_text(obj.get("content"))
        elif kind == "message" and role == "user":
            yield ctx.user(transcript_text(obj.get("content")))
        elif kind == "message" and role in ("system", "developer"):
            yield ctx.system(transcript_text(obj.get("content")))
        else:
            yield ctx.warning(
                f"unsupported item (type {kind!r}, role {role!r}); skipped",
                "bad-message",
            )

    def _call(self, obj: dict[str, Any], ctx: Context, *, custom: bool) -> Stream:
        name = obj.get("name")
        if not isinstance(name, str):
            yield ctx.warning("function_call item has no name; skipped", "bad-call")
            return
        call_id = str(obj.get("call_id") or obj.get("id") or f"call@{ctx.line}")
        if custom:
            args: Any = obj.get("input", "")
        else:
            args, note = ctx.arguments(obj.get("arguments"), call_id, name)
            if note is not None:
                yield note
        self._calls.append(ToolCall(call_id, name, args))
