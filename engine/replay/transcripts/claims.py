"""Which generic transcript format an element belongs to, by what only that format writes.

`claiming_format(element)` is how a reader notices a file that mixes formats (an event log
line in an OpenAI Chat file, ...): the readers ask it about every element, and `detect`
uses the same markers. It lives apart from the readers so that they and `detect` can all
import it (it imports none of them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

EVENTS = (
    "system_message",
    "user_message",
    "assistant_message",
    "tool_result",
    "compaction",
    "session_end",
)
_ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use"}
)
_RESPONSES_TYPES = frozenset(
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
_RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file"})


def eventlog(obj: Any) -> bool:
    """True for objects with an `event` member naming an event-log event."""
    return isinstance(obj, dict) and obj.get("event") in EVENTS and "role" not in obj


def anthropic(obj: Any) -> bool:
    """True for messages with content blocks only Anthropic uses."""
    if not isinstance(obj, dict) or "event" in obj or not isinstance(obj.get("content"), list):
        return False
    return any(
        isinstance(block, dict)
        and isinstance(block.get("type"), str)
        and block["type"] in _ANTHROPIC_BLOCKS
        for block in obj["content"]
    )


def kind(value: Any) -> str | None:
    """A `type` field as text; anything else (a list, a number) names no known type."""
    return value if isinstance(value, str) else None


def openai_responses(obj: Any) -> bool:
    """True for items only the Responses format has."""
    if not isinstance(obj, dict) or "event" in obj:
        return False
    if kind(obj.get("type")) in _RESPONSES_TYPES:
        return True
    content = obj.get("content")
    return isinstance(content, list) and any(
        isinstance(part, dict) and kind(part.get("type")) in _RESPONSES_PARTS for part in content
    )


def openai_chat(obj: Any) -> bool:
    """True for elements only the Chat format has (tool calls, tool messages)."""
    if not isinstance(obj, dict) or "event" in obj:
        return False
    return (
        "tool_calls" in obj
        or "tool_call_id" in obj
        or obj.get("role") in ("tool", "function")
        or (obj.get("role") == "assistant" and isinstance(obj.get("function_call"), dict))
    )


CLAIMERS: tuple[tuple[str, Callable[[Any], bool]], ...] = (
    ("eventlog", eventlog),
    ("anthropic", anthropic),
    ("openai-responses", openai_responses),
    ("openai-chat", openai_chat),
)


def claiming_format(obj: Any) -> str | None:
    """The one generic format whose own markers this element carries, if any."""
    for name, claims in CLAIMERS:
        if claims(obj):
            return name
    return None
