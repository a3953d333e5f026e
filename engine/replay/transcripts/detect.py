"""The transcript formats (`READERS`) and choosing one for a file from its first kilobytes.

The layout comes first: a file whose first line is a complete JSON value
followed by more lines is JSONL; anything else starting with `[` or `{` is
one JSON document (streamed). When the first line is longer than the sniffed
head, the file is JSONL if anything follows that first line.

The format comes from markers, keys only that format writes (each reader's `MARKERS`),
counted in the head. `READERS` is tried tier by tier: loopguard's own event log, then
the agents' own files, then the generic conversation formats; in a tier the format with
the most markers wins, the first one on a tie. Plain user/assistant text messages read
the same in every generic format, so without markers Chat is used (Responses for a
document with an `input` or `output` list and no `messages`); a file with none of these
is an error listing the formats tried. A head with no marker of any format is not the
end: a document can open with a long member (mini-swe-agent writes `info`, with the whole
diff, before `messages`), so the markers are looked for further, window by window
(`WINDOW_BYTES`, each with the end of the one before, so a marker a window edge cuts is
still seen), up to `SCAN_MAX_BYTES`, before the plain-message fallbacks apply.
`--input-format` skips all of this.

Adding a format is its module (`NAME`, `LABEL`, `MARKERS`, `read(transcript)`; a generic
format also `claims(element)`), one row of `READERS` and its tests.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

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
from loopguard.replay.transcripts.events import Format, Transcript
from loopguard.replay.transcripts.source import HEAD_BYTES, Source, input_error
from loopguard.text import jsontext

SCAN_MAX_BYTES = 32 * 1024 * 1024  # how far detection looks for markers past the head
WINDOW_BYTES = 1024 * 1024
OVERLAP_CHARS = 512


@dataclass(frozen=True)
class Reader:
    """One row of `READERS`: a format and how detection tells it."""

    format: Format
    tier: int  # detection tries the tiers in order (see the module docstring)
    # a generic format's test of one element: a reader that meets an element another
    # generic format claims stops with a "mixed formats" error
    claims: Callable[[Any], bool] | None = None

    @cached_property
    def markers(self) -> re.Pattern[str]:
        return re.compile(self.format.MARKERS)


# Every format, in priority order: tier 0 is loopguard's own event log, 1 the agents' own
# files, 2 the generic conversation formats; a tie within a tier goes to the earlier row,
# and an element two generic formats claim belongs to the earlier one.
READERS = (
    Reader(eventlog, 0, eventlog.claims),
    Reader(claude_code, 1),
    Reader(codex, 1),
    Reader(openhands, 1),
    Reader(swe_agent, 1),
    Reader(mini_swe_agent, 1),
    Reader(tau_bench, 1),
    Reader(otlp, 1),
    Reader(gemini, 1),
    Reader(anthropic, 2, anthropic.claims),
    Reader(openai_responses, 2, openai_responses.claims),
    Reader(openai_chat, 2, openai_chat.claims),
)
_BY_NAME = {reader.format.NAME: reader for reader in READERS}
_TIERS = sorted({reader.tier for reader in READERS})
# The names `--input-format` takes, listed (as they always were) with the generic
# conversation formats from the plainest to the most specific.
FORMATS = (
    *(r.format.NAME for r in READERS if r.tier < _TIERS[-1]),
    *(r.format.NAME for r in reversed(READERS) if r.tier == _TIERS[-1]),
)


def _claimed_by(element: Any) -> str | None:
    """The one generic format whose own markers this element carries, if any."""
    for reader in READERS:
        if reader.claims is not None and reader.claims(element):
            return reader.format.NAME
    return None


def open_transcript(path: str, input_format: str | None = None) -> Transcript:
    """Open `path` (`-` is standard input) and choose its reader.

    Raises `InputError` when it cannot be read.
    """
    source = Source(path)
    if input_format is not None and input_format not in _BY_NAME:
        raise input_error(
            source.name,
            0,
            f"unknown input format {input_format!r}",
            hint="use one of " + ", ".join(FORMATS),
        )
    head = source.head()
    layout = _layout(source, head)
    reader = _BY_NAME[input_format or _detect(source, head)].format
    if reader is gemini and gemini_cli.is_recording(head):
        reader = gemini_cli  # Gemini CLI's own recordings: format `gemini`, their own reader
    return Transcript(source, reader, layout, _claimed_by)


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
    """The format by its markers in the head, else further in the file, else a fallback."""
    found = _marked_format(head)
    if found is None and not source.head_complete:
        found = next((f for text in _windows(source) if (f := _marked_format(text))), None)
    if found is not None:
        return found
    if re.search(r'"(?:input|output)"\s*:\s*\[', head) and not re.search(r'"messages"\s*:', head):
        return openai_responses.NAME
    if re.search(r'"role"\s*:', head):
        return openai_chat.NAME
    raise input_error(
        source.name,
        1,
        "cannot tell the transcript format: no messages or events found at the start; "
        "tried " + ", ".join(FORMATS),
        code="wrong-shape",
        hint="force one with --input-format " + "|".join(FORMATS),
    )


def _marked_format(text: str) -> str | None:
    """The format whose markers `text` holds (the most of them, in the first tier with any)."""
    for tier in _TIERS:
        counts = [(len(r.markers.findall(text)), r) for r in READERS if r.tier == tier]
        count, reader = max(counts, key=lambda item: item[0])
        if count:
            return reader.format.NAME
    return None


def _windows(source: Source) -> Iterator[str]:
    """Text windows from the start of `source` (decompressed), at most SCAN_MAX_BYTES."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    read, carry = 0, ""
    with source.open_binary() as fh:
        while read < SCAN_MAX_BYTES:
            raw = fh.read(min(WINDOW_BYTES, SCAN_MAX_BYTES - read))
            if not raw:
                return
            read += len(raw)
            text = carry + decoder.decode(raw)
            yield text
            carry = text[-OVERLAP_CHARS:]
