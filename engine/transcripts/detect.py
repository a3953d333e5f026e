"""Choosing the reader for a file, from its first kilobytes only.

The layout comes first: a file whose first line is a complete JSON value
followed by more lines is JSONL; anything else starting with `[` or `{` is
one JSON document (streamed). When the first line is longer than the sniffed
head, the file is JSONL if anything follows that first line.

The format comes from markers only one format uses (counted in the head):
`"event": "user_message"` and friends (event log), `tool_use`/`tool_result`
blocks (Anthropic), `function_call` items or `input_text` parts (Responses),
`tool_calls`/`tool_call_id`/`role: tool` (Chat). Plain user/assistant text
messages read the same in every format, so without markers Chat is used.
`--input-format` skips all of this.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..findings import Finding
from . import anthropic, eventlog, openai_chat, openai_responses
from .conversation import read_conversations
from .events import Event
from .source import HEAD_BYTES, Source, input_error

FORMATS = ("eventlog", "openai-chat", "openai-responses", "anthropic")
_CONVERSATION_FORMATS = {"openai-chat": openai_chat, "openai-responses": openai_responses,
                         "anthropic": anthropic}
_CLAIMERS = (("eventlog", eventlog.claims), ("anthropic", anthropic.claims),
             ("openai-responses", openai_responses.claims), ("openai-chat", openai_chat.claims))
_MARKERS = {
    "eventlog": re.compile(r'"event"\s*:\s*"(?:%s)"' % "|".join(eventlog.EVENTS)),
    "anthropic": re.compile(r'"type"\s*:\s*"(?:tool_use|tool_result|thinking|redacted_thinking)"|"tool_use_id"\s*:'),
    "openai-responses": re.compile(
        r'"type"\s*:\s*"(?:function_call|function_call_output|reasoning|custom_tool_call|input_text|output_text)"'
        r'|"call_id"\s*:'),
    "openai-chat": re.compile(r'"tool_calls"\s*:|"tool_call_id"\s*:|"role"\s*:\s*"tool"'),
}


def claiming_format(obj: Any) -> str | None:
    """The one format whose own markers this element carries, if any."""
    for name, claims in _CLAIMERS:
        if claims(obj):
            return name
    return None


@dataclass
class Transcript:
    """An opened input file with its detected (or forced) format and layout."""

    source: Source
    format: str
    layout: str  # "jsonl" or "document"

    def events(self) -> Iterator[Event | Finding]:
        if self.format == "eventlog":
            return eventlog.read(self.source)
        return read_conversations(self.source, _CONVERSATION_FORMATS[self.format], self.layout)


def open_transcript(path: str, input_format: str | None = None) -> Transcript:
    """Open `path` and choose its reader; raises `InputError` when it cannot be read."""
    source = Source(path)
    head = source.head()
    layout = _layout(source, head)
    if input_format is not None:
        if input_format not in FORMATS:
            raise input_error(path, 0, f"unknown input format {input_format!r}", hint="use one of " + ", ".join(FORMATS))
        return Transcript(source, input_format, layout)
    return Transcript(source, _format(path, head), layout)


def _layout(source: Source, head: str) -> str:
    text = head.lstrip()
    if text[:1] not in ("[", "{"):
        line = head[: len(head) - len(text)].count("\n") + 1
        raise input_error(source.name, line, "not a JSON or JSONL transcript (it does not start with '[' or '{')",
                          code="wrong-shape", hint="supported: " + ", ".join(FORMATS))
    if text[0] == "[":
        return "document"
    first, newline, rest = text.partition("\n")
    if newline:
        try:
            json.loads(first)
        except ValueError:
            return "document"
        return "jsonl" if rest.strip() or source.size > HEAD_BYTES else "document"
    if source.size <= HEAD_BYTES:
        return "document"
    return "jsonl" if _more_after_first_line(source) else "document"


def _more_after_first_line(source: Source) -> bool:
    """True when something follows the (long) first line: scans chunk by chunk, memory flat."""
    with open(source.path, "rb") as fh:
        seen_newline = False
        while chunk := fh.read(HEAD_BYTES):
            if not seen_newline:
                at = chunk.find(b"\n")
                if at < 0:
                    continue
                seen_newline, chunk = True, chunk[at + 1:]
            if chunk.strip():
                return True
    return False


def _format(path: str, head: str) -> str:
    scores = {name: len(pattern.findall(head)) for name, pattern in _MARKERS.items()}
    if scores["eventlog"]:
        return "eventlog"
    best = max(("anthropic", "openai-responses", "openai-chat"), key=lambda name: scores[name])
    if scores[best]:
        return best
    if re.search(r'"(?:input|output)"\s*:\s*\[', head) and not re.search(r'"messages"\s*:', head):
        return "openai-responses"
    if re.search(r'"role"\s*:', head):
        return "openai-chat"
    raise input_error(path, 1, "cannot tell the transcript format: no messages or events found at the start",
                      code="wrong-shape",
                      hint="expected chat messages, Responses items, Anthropic messages or loopguard events; "
                           "force one with --input-format " + "|".join(FORMATS))
