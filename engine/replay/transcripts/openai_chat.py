"""Reader of OpenAI Chat Completions transcripts.

Messages are `{"role": ..., "content": ...}`; assistant messages may carry
`tool_calls: [{"id", "type": "function", "function": {"name", "arguments"}}]`
where `arguments` is a JSON string (invalid JSON is replayed as raw text with
a warning); results are `{"role": "tool", "tool_call_id", "content"}`. The
legacy `function_call`/`role: function` pair is read too. A non-standard
`"is_error": true` on a tool message marks a failed call. An element
`{"type": "compaction"}` marks a context compaction (Chat has no native one).
Containers: see `conversation.py`.
"""

from __future__ import annotations

from typing import Any

from loopguard.replay.transcripts.conversation import no_events, read_conversations
from loopguard.replay.transcripts.events import (
    Context,
    Stream,
    ToolResult,
    Transcript,
    result_content,
    transcript_text,
)

NAME = "openai-chat"
LABEL = "OpenAI Chat"
MARKERS = r'"tool_calls"\s*:|"tool_call_id"\s*:|"role"\s*:\s*"tool"'


def claims(obj: Any) -> bool:
    """True for elements only the Chat format has (tool calls, tool messages)."""
    if not isinstance(obj, dict) or "event" in obj:
        return False
    return (
        "tool_calls" in obj
        or "tool_call_id" in obj
        or obj.get("role") in ("tool", "function")
        or (obj.get("role") == "assistant" and isinstance(obj.get("function_call"), dict))
    )


def read(transcript: Transcript) -> Stream:
    return read_conversations(transcript, ("messages",), ChatTranslator)


class ChatTranslator:
    """Stateless apart from numbering calls that have no id."""

    def __init__(self) -> None:
        self._legacy: list[str] = []  # ids given to legacy function_call messages, oldest first

    flush = staticmethod(no_events)

    def field(self, key: str, value: Any, ctx: Context) -> Stream:
        return no_events(ctx)

    def message(self, obj: dict[str, Any], ctx: Context) -> Stream:
        role = obj.get("role")
        if obj.get("type") == "compaction" and role is None:
            yield ctx.compaction()
        elif role in ("system", "developer"):
            yield ctx.system(transcript_text(obj.get("content")))
        elif role == "user":
            yield ctx.user(transcript_text(obj.get("content")))
        elif role == "assistant":
            yield from self._assistant(obj, ctx)
        elif role in ("tool", "function"):
            yield self._result(obj, ctx)
        else:
            yield ctx.warning(
                f"message with unknown role {role!r}; skipped",
                "bad-message",
                hint="Chat roles are system, developer, user, assistant and tool",
            )

    def _assistant(self, obj: dict[str, Any], ctx: Context) -> Stream:
        raw_calls = obj.get("tool_calls") or []
        if isinstance(obj.get("function_call"), dict):
            raw_calls = [{"id": f"call@{ctx.line}", "function": obj["function_call"]}]
            self._legacy.append(f"call@{ctx.line}")
        if not isinstance(raw_calls, list):
            raw_calls = []
            yield ctx.warning("`tool_calls` is not a list; ignored", "bad-message")
        text = transcript_text(obj.get("content")) or (obj.get("refusal") or "")
        yield from ctx.reply_calling(text, raw_calls, True)

    def _result(self, obj: dict[str, Any], ctx: Context) -> ToolResult:
        call_id = obj.get("tool_call_id")
        if call_id is None and obj.get("role") == "function" and self._legacy:
            call_id = self._legacy.pop(0)
        return ctx.result(
            str(call_id or ""),
            result_content(obj.get("content")),
            bool(obj.get("is_error")),
            obj.get("name"),
        )
