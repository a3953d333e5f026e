"""The text of a chat message: string content, or its text parts joined with nothing between.

What is read from the messages (OpenAI-style dicts): a message's text is its `content`
when that is a string, or the concatenation of the `text` fields of its parts when it is a
list of parts (`{"type": "text", "text": ...}`; parts of other types, such as images, are
skipped). Any other content (None, a dict, a number, tool calls only) counts as no text;
a non-dict message is skipped. The runtime, the turn policy and replay all read text here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

TEXT_PART_TYPES = (None, "text", "input_text", "output_text")


def content_text(message: Any) -> str:
    """The text of one message as described in the module docstring."""
    if not isinstance(message, Mapping):
        return ""
    return parts_text(message.get("content"))


def parts_text(content: Any) -> str:
    """A message content's text: a string as is, or its text parts joined with nothing between.

    The one rule for runtime and replay alike: a model's or a user's message split into
    parts (`帮我看看` + `持仓`) reads as the text it was split from.
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p.get("text")
            for p in content
            if isinstance(p, Mapping) and p.get("type") in TEXT_PART_TYPES
        ]
        return "".join(p for p in parts if isinstance(p, str))
    return ""


def strip_recall(text: str, keep_tag: str, drop_tag: str) -> str:
    """Keep the last `<keep_tag>` section if any; drop every `<drop_tag>` section."""
    opening = re.compile(f"<{re.escape(keep_tag)}>", re.IGNORECASE)
    starts = [m.end() for m in opening.finditer(text)]
    if starts:
        rest = text[starts[-1] :]
        close = re.search(f"</{re.escape(keep_tag)}>", rest, re.IGNORECASE)
        text = rest[: close.start()] if close else rest
    drop = re.escape(drop_tag)
    text = re.sub(f"<{drop}>.*?(</{drop}>|$)", "", text, flags=re.IGNORECASE | re.DOTALL)
    return text
