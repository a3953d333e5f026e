"""Streaming a JSON document one element at a time, with line numbers.

Transcripts often come as one JSON document: an array of messages, or an
object whose `messages` (or `input`/`output`) member is that array. Loading a
large one whole would hold the file in memory twice; instead this reads
chunks and decodes one element at a time with `json.JSONDecoder.raw_decode`,
keeping only the current element in memory. It also tells each element's
line, which the replay report points at.

Yields `("item", key, line, value)` for each element of the top-level array
(key None) or of a streamed member of the top-level object, and
`("field", key, line, value)` for the object's other members.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from loopguard.replay.transcripts.source import MAX_ELEMENT_BYTES, Source, input_error
from loopguard.text.jsontext import raw_decode

_WS = " \t\r\n"
MAX_ELEMENT_CHARS = MAX_ELEMENT_BYTES  # one message larger than this is an error (never read)


class _Cursor:
    """A sliding text window over the file, tracking the line at `pos`."""

    def __init__(self, source: Source) -> None:
        self.file = source.name
        self.chunks = source.chunks()
        self.text = ""
        self.pos = 0
        self.line = 1
        self.eof = False

    def _fill(self) -> bool:
        if self.eof:
            return False
        if self.pos:
            self.text = self.text[self.pos :]
            self.pos = 0
        # the window doubles (a large element costs linear time), up to the element limit
        want = max(min(len(self.text), MAX_ELEMENT_CHARS + 1 - len(self.text)), 1)
        got = 0
        parts = [self.text]
        while got < want:
            chunk = next(self.chunks, None)
            if chunk is None:
                self.eof = True
                break
            parts.append(chunk)  # joined once: `+=` per chunk would copy the window each time
            got += len(chunk)
        self.text = "".join(parts)
        return got > 0

    def _advance(self, end: int) -> None:
        self.line += self.text.count("\n", self.pos, end)
        self.pos = end

    def peek(self) -> str:
        """The next non-whitespace character ('' at the end of the file)."""
        while True:
            end = self.pos
            while end < len(self.text) and self.text[end] in _WS:
                end += 1
            self._advance(end)
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self._fill():
                return ""

    def expect(self, chars: str, what: str) -> str:
        char = self.peek()
        if not char or char not in chars:
            found = repr(char) if char else "the end of the file"
            raise input_error(
                self.file,
                self.line,
                f"invalid JSON: expected {what}, found {found}",
                code="bad-json",
            )
        self._advance(self.pos + 1)
        return char

    def _too_large(self) -> Exception:
        """An element over the limit: the file is read no further (a gzip bomb stays small)."""
        return input_error(
            self.file,
            self.line,
            f"a JSON element is larger than {MAX_ELEMENT_CHARS >> 20:,} MiB (the limit for one "
            "message); the file is read no further",
            code="too-large",
        )

    def value(self) -> Any:
        """Decode the next JSON value, reading more of the file as needed."""
        self.peek()
        while True:
            try:
                value, end = raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                offset = exc.pos - self.pos  # _fill() moves the window: keep the error's offset
                incomplete = exc.pos >= len(self.text) - 8 or exc.msg.startswith(
                    "Unterminated string"
                )
                if incomplete and len(self.text) - self.pos > MAX_ELEMENT_CHARS:
                    raise self._too_large() from None
                if incomplete and self._fill():
                    continue
                line = self.line + self.text.count("\n", self.pos, self.pos + offset)
                raise input_error(
                    self.file, line, f"invalid JSON: {exc.msg}", code="bad-json"
                ) from None
            except RecursionError:
                raise input_error(
                    self.file, self.line, "invalid JSON: nested too deeply", code="bad-json"
                ) from None
            if end >= len(self.text) and not self.eof and self._fill():
                continue  # a number or literal may go on in the next chunk
            self._advance(end)
            return value


def stream_document(
    source: Source, stream_keys: Iterable[str]
) -> Iterator[tuple[str, str | None, int, Any]]:
    """Walk a top-level array or object, streaming array members named in `stream_keys`."""
    keys = frozenset(stream_keys)
    cur = _Cursor(source)
    opening = cur.expect("[{", "a JSON array or object")
    if opening == "[":
        yield from _array(cur, None)
    else:
        yield from _object(cur, keys)
    if cur.peek():
        raise input_error(
            cur.file,
            cur.line,
            "extra data after the JSON document",
            code="bad-json",
            hint="a file with one JSON value per line must not be pretty-printed",
        )


def _array(cur: _Cursor, key: str | None) -> Iterator[tuple[str, str | None, int, Any]]:
    if cur.peek() == "]":
        cur.expect("]", "']'")
        return
    while True:
        cur.peek()
        line = cur.line
        yield "item", key, line, cur.value()
        if cur.expect(",]", "',' or ']'") == "]":
            return


def _object(cur: _Cursor, keys: frozenset[str]) -> Iterator[tuple[str, str | None, int, Any]]:
    if cur.peek() == "}":
        cur.expect("}", "'}'")
        return
    while True:
        if cur.peek() != '"':
            cur.expect('"', "a member name")
        name = cur.value()
        cur.expect(":", "':'")
        cur.peek()
        line = cur.line
        if name in keys and cur.peek() == "[":
            cur.expect("[", "'['")
            yield from _array(cur, name)
        else:
            yield "field", name, line, cur.value()
        if cur.expect(",}", "',' or '}'") == "}":
            return
