"""Reader of Anthropic Messages transcripts.

Messages are `{"role": "user"|"assistant", "content": str | [blocks]}`. An
assistant message's `tool_use` blocks (`id`, `name`, `input`) are its tool
calls; the next user message answers them with `tool_result` blocks
(`tool_use_id`, `content`, `is_error`). A user message that carries tool
results is the runtime answering calls, not a new request: its text blocks do
not start a turn. The top-level `system` member is system context. A
`compaction` content block, or an element `{"type": "compaction"}`, marks a
context compaction. Containers: see `conversation.py`.
"""

from __future__ import annotations

from typing import Any

from loopguard.findings import Finding
from loopguard.replay.transcripts.conversation import no_events, read_conversations, system_context
from loopguard.replay.transcripts.events import (
    Context,
    Stream,
    ToolCall,
    ToolResult,
    Transcript,
    result_content,
    transcript_text,
)

NAME = "anthropic"
LABEL = "Anthropic Messages"
MARKERS = r'"type"\s*:\s*"(?:tool_use|tool_result|thinking|redacted_thinking)"|"tool_use_id"\s*:'
_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use"})


def claims(obj: Any) -> bool:
    """True for messages with content blocks only Anthropic uses."""
    if not isinstance(obj, dict) or "event" in obj or not isinstance(obj.get("content"), list):
        return False
    return any(
        isinstance(block, dict) and isinstance(block.get("type"), str) and block["type"] in _BLOCKS
        for block in obj["content"]
    )


def read(transcript: Transcript) -> Stream:
    return read_conversations(transcript, ("messages",), AnthropicTranslator)


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


class AnthropicTranslator:
    """Stateless: every message is translated on its own."""

    flush = staticmethod(no_events)

    def field(self, key: str, value: Any, ctx: Context) -> Stream:
        return system_context(transcript_text(value), ctx) if key == "system" else no_events(ctx)

    def message(self, obj: dict[str, Any], ctx: Context) -> Stream:
        role = obj.get("role")
        blocks = _blocks(obj.get("content"))
        if (
            obj.get("type") == "compaction"
            and role is None
            or any(isinstance(b, dict) and b.get("type") == "compaction" for b in blocks)
        ):
            yield ctx.compaction()
        if role == "assistant":
            yield from self._assistant(blocks, ctx)
        elif role == "user":
            yield from self._user(blocks, ctx)
        elif role == "system":
            yield ctx.system(transcript_text(blocks))
        elif role is not None or obj.get("type") != "compaction":
            yield ctx.warning(
                f"message with unknown role {role!r}; skipped",
                "bad-message",
                hint="Anthropic roles are user and assistant",
            )

    def _assistant(self, blocks: list[Any], ctx: Context) -> Stream:
        calls, notes = tool_uses(blocks, ctx)
        yield from notes
        yield ctx.reply(transcript_text(blocks), calls)

    def _user(self, blocks: list[Any], ctx: Context) -> Stream:
        answered = False
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                answered = True
                yield tool_result(block, ctx)
        if not answered:
            yield ctx.user(transcript_text(blocks))


def tool_uses(blocks: list[Any], ctx: Context) -> tuple[tuple[ToolCall, ...], list[Finding]]:
    """The calls of a message's `tool_use` blocks, and the warnings about blocks skipped."""
    calls: list[ToolCall] = []
    notes: list[Finding] = []
    for index, block in enumerate(blocks):
        if not isinstance(block, dict) or block.get("type") != "tool_use":
            continue
        if not isinstance(block.get("name"), str):
            notes.append(
                ctx.warning(f"tool_use block #{index + 1} has no name; skipped", "bad-call")
            )
            continue
        calls.append(
            ToolCall(ctx.call_id(block.get("id"), index), block["name"], block.get("input", {}))
        )
    return tuple(calls), notes


def tool_result(block: dict[str, Any], ctx: Context) -> ToolResult:
    """The result a `tool_result` block carries."""
    return ctx.result(
        str(block.get("tool_use_id") or ""),
        result_content(block.get("content")),
        bool(block.get("is_error")),
    )
