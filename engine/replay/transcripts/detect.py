"""Choosing the reader for a file, from its first kilobytes (further only when they hold no marker).

The layout comes first: a file whose first line is a complete JSON value
followed by more lines is JSONL; anything else starting with `[` or `{` is
one JSON document (streamed). When the first line is longer than the sniffed
head, the file is JSONL if anything follows that first line.

The format comes from markers only one format uses (counted in the head).
The agents' own formats are tried first, each by the keys only it writes
(Claude Code's `parentUuid`/`isSidechain`, Codex's `session_meta`/
`response_item` lines, OpenHands' `action`/`observation` events, SWE-agent's
`trajectory` steps, mini-swe-agent's `mini_version`, tau-bench's `traj` runs,
OpenTelemetry traces' `resourceSpans`/`spanId`, Gemini's `parts`, Gemini CLI's
`projectHash`); then the generic
ones: `"event": "user_message"` and friends (event log), `tool_use`/`tool_result` blocks
(Anthropic), `function_call` items or `input_text` parts (Responses),
`tool_calls`/`tool_call_id`/`role: tool` (Chat). Plain user/assistant text
messages read the same in every generic format, so without markers Chat is
used; a file with none of these is an error listing the formats tried.
A head with no marker of any format is not the end: a document can open with a long
member (mini-swe-agent writes `info`, with the whole diff, before `messages`), so the
markers are looked for further, window by window, up to `sniff.SCAN_MAX_BYTES`, before
the plain-message fallbacks apply. `--input-format` skips all of this.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property

from loopguard.findings import Finding
from loopguard.replay.transcripts import (
    anthropic,
    claude_code,
    codex,
    eventlog,
    gemini,
    gemini_cli,
    mini_swe_agent,
    openai_chat,
    openai_responses,
    openhands,
    otlp,
    swe_agent,
    tau_bench,
)
from loopguard.replay.transcripts import source as source_module
from loopguard.replay.transcripts.claims import EVENTS
from loopguard.replay.transcripts.conversation import read_conversations
from loopguard.replay.transcripts.events import Event
from loopguard.replay.transcripts.sniff import windows
from loopguard.replay.transcripts.source import HEAD_BYTES, Source, input_error
from loopguard.text import jsontext

_AGENT_READERS: dict[str, Callable[[Source, str], Iterator[Event | Finding]]] = {
    "claude-code": claude_code.read,
    "codex": codex.read,
    "openhands": openhands.read,
    "swe-agent": swe_agent.read,
    "mini-swe-agent": mini_swe_agent.read,
    "tau-bench": tau_bench.read,
    "otlp": otlp.read,
}
_CONVERSATION_FORMATS = {
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
    "anthropic": anthropic,
    "gemini": gemini,
}
FORMATS = ("eventlog", *_AGENT_READERS, "gemini", "openai-chat", "openai-responses", "anthropic")
LABELS = {
    "eventlog": eventlog.LABEL,
    "claude-code": claude_code.LABEL,
    "codex": codex.LABEL,
    "openhands": openhands.LABEL,
    "swe-agent": swe_agent.LABEL,
    "mini-swe-agent": mini_swe_agent.LABEL,
    "tau-bench": tau_bench.LABEL,
    "otlp": otlp.LABEL,
    "gemini": gemini.LABEL,
    "openai-chat": openai_chat.LABEL,
    "openai-responses": openai_responses.LABEL,
    "anthropic": anthropic.LABEL,
}
_AGENT_MARKERS = {
    name: re.compile(module.MARKERS)
    for name, module in (
        ("claude-code", claude_code),
        ("codex", codex),
        ("openhands", openhands),
        ("swe-agent", swe_agent),
        ("mini-swe-agent", mini_swe_agent),
        ("tau-bench", tau_bench),
        ("otlp", otlp),
        ("gemini", gemini),
    )
}
# Gemini CLI's chat recordings are read by `--input-format gemini` too (see Transcript).
_AGENT_MARKERS["gemini"] = re.compile(f"{gemini.MARKERS}|{gemini_cli.MARKERS}")
_MARKERS = {
    "eventlog": re.compile(r'"event"\s*:\s*"(?:' + "|".join(EVENTS) + ')"'),
    "anthropic": re.compile(
        r'"type"\s*:\s*"(?:tool_use|tool_result|thinking|redacted_thinking)"|"tool_use_id"\s*:'
    ),
    "openai-responses": re.compile(
        r'"type"\s*:\s*"(?:function_call|function_call_output|reasoning|custom_tool_call|input_text|output_text)"'
        r'|"call_id"\s*:'
    ),
    "openai-chat": re.compile(r'"tool_calls"\s*:|"tool_call_id"\s*:|"role"\s*:\s*"tool"'),
}


@dataclass
class Transcript:
    """An opened input file with its detected (or forced) format and layout."""

    source: Source
    format: str
    layout: str  # "jsonl" or "document"

    @property
    def label(self) -> str:
        return gemini_cli.LABEL if self._gemini_cli else LABELS[self.format]

    @cached_property
    def _gemini_cli(self) -> bool:
        """A `gemini` file that is a Gemini CLI chat recording, not API `contents`."""
        return self.format == "gemini" and gemini_cli.is_recording(self.source.head())

    def events(self) -> Iterator[Event | Finding]:
        if self._gemini_cli:
            return gemini_cli.read(self.source, self.layout)
        if self.format == "eventlog":
            return eventlog.read(self.source)
        if self.format in _AGENT_READERS:
            return _AGENT_READERS[self.format](self.source, self.layout)
        return read_conversations(self.source, _CONVERSATION_FORMATS[self.format], self.layout)


def open_transcript(path: str, input_format: str | None = None) -> Transcript:
    """Open `path` (`-` is standard input) and choose its reader.

    Raises `InputError` when it cannot be read.
    """
    source = Source(path)
    if input_format is not None and input_format not in FORMATS:
        raise input_error(
            source.name,
            0,
            f"unknown input format {input_format!r}",
            hint="use one of " + ", ".join(FORMATS),
        )
    head = source.head()
    layout = _layout(source, head)
    return Transcript(source, input_format or _detect(source, head), layout)


def _layout(source: Source, head: str) -> str:
    text = head.lstrip()
    if text[:1] not in ("[", "{"):
        line = head[: len(head) - len(text)].count("\n") + 1
        raise input_error(
            source.name,
            line,
            "not a JSON or JSONL transcript (it does not start with '[' or '{')",
            code="wrong-shape",
            hint="supported: " + ", ".join(FORMATS),
        )
    if text[0] == "[":
        return "document"
    first, newline, rest = text.partition("\n")
    if newline:
        try:
            jsontext.loads(first)
        except ValueError:
            return "document"
        except RecursionError:  # a complete line, nested too deeply: JSONL warns about it
            pass
        return "jsonl" if rest.strip() or not source.head_complete else "document"
    if source.head_complete:
        return "document"
    return "jsonl" if _more_after_first_line(source) else "document"


def _more_after_first_line(source: Source) -> bool:
    """True when something follows the (long) first line: scans chunk by chunk, memory flat.

    The first line is scanned no further than the element limit (a small gzip may hold
    gigabytes): past it, the file is read as one document, which has the same limit.
    """
    with source.open_binary() as fh:
        seen_newline, scanned = False, 0
        while chunk := fh.read(HEAD_BYTES):
            if not seen_newline:
                at = chunk.find(b"\n")
                scanned += len(chunk)
                if at < 0 and scanned > source_module.MAX_ELEMENT_BYTES:
                    return False
                if at < 0:
                    continue
                seen_newline, chunk = True, chunk[at + 1 :]
            if chunk.strip():
                return True
    return False


def _detect(source: Source, head: str) -> str:
    """The format by its markers in the head, else further in the file, else `_format`'s."""
    found = _marked_format(head)
    if found is None and not source.head_complete:
        found = next((f for text in windows(source) if (f := _marked_format(text))), None)
    return found or _format(source.name, head)


def _marked_format(head: str) -> str | None:
    """The format whose markers `head` holds (the most of them), or None."""
    if _MARKERS["eventlog"].search(head):
        return "eventlog"
    agents = {name: len(pattern.findall(head)) for name, pattern in _AGENT_MARKERS.items()}
    best = max(agents, key=lambda name: agents[name])
    if agents[best]:
        return best
    scores = {
        name: len(_MARKERS[name].findall(head))
        for name in ("anthropic", "openai-responses", "openai-chat")
    }
    best = max(scores, key=lambda name: scores[name])
    if scores[best]:
        return best
    return None


def _format(path: str, head: str) -> str:
    found = _marked_format(head)
    if found is not None:
        return found
    if re.search(r'"(?:input|output)"\s*:\s*\[', head) and not re.search(r'"messages"\s*:', head):
        return "openai-responses"
    if re.search(r'"role"\s*:', head):
        return "openai-chat"
    raise input_error(
        path,
        1,
        "cannot tell the transcript format: no messages or events found at the start; "
        "tried " + ", ".join(FORMATS),
        code="wrong-shape",
        hint="force one with --input-format " + "|".join(FORMATS),
    )
