"""A small JSON5 reader that keeps the line:col of every value.

The OpenClaw configuration blocks users paste are JSON5: unquoted keys,
`//` and `/* */` comments, single- or double-quoted strings, trailing commas.
There is no JSON5 package in loopguard's dependencies, so this reads the
subset those blocks use: objects, arrays, strings, numbers (decimal, hex,
`Infinity`, `NaN`, a leading `+`), `true`/`false`/`null`. Several top-level
values may follow each other (the seed shows two blocks one after another);
`data` is then the list of them, and paths start with the block's index.
Nesting is bounded by `MAX_DEPTH`, so no input can overflow the stack.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

from loopguard.config.positions import Path, Pos, SourceDoc

MAX_DEPTH = 100
MAX_NUMBER_CHARS = 64  # a longer literal is no threshold (and int() refuses > 4,300 digits)
_SPACE = " \t\n\r\v\f\u00a0\ufeff\u2028\u2029"
_NUMBER = re.compile(
    r"[+-]?(?:Infinity|NaN|0[xX][0-9a-fA-F]+|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
)
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "0": "\0"}
_NEWLINES = "\n\r\u2028\u2029"


# (code, level, stage, what it means): the codes raised here, as `lint --list-checks`
# and docs/rules.md document them
CODES = (
    (
        "json5-syntax",
        "error",
        "syntax",
        "The JSON5 (OpenClaw) file does not parse.\n\n"
        "Fails: `{tools: {loopDetection: {enabled: true,}`.",
    ),
)


class _Fail(Exception):
    def __init__(self, index: int, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.index, self.message, self.hint = index, message, hint


class _Reader:
    def __init__(self, text: str, doc: SourceDoc) -> None:
        self.text = text
        self.doc = doc
        self.i = 0
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\r\n|[\n\r\u2028\u2029]", text)]

    def pos(self, index: int) -> Pos:
        line = bisect.bisect_right(self.line_starts, index)
        return line, index - self.line_starts[line - 1] + 1

    def skip(self) -> None:
        """Skip whitespace and comments."""
        text, n = self.text, len(self.text)
        while self.i < n:
            c = text[self.i]
            if c in _SPACE:
                self.i += 1
            elif text.startswith("//", self.i):
                while self.i < n and text[self.i] not in _NEWLINES:
                    self.i += 1
            elif text.startswith("/*", self.i):
                end = text.find("*/", self.i + 2)
                if end < 0:
                    raise _Fail(self.i, "unterminated /* comment", "close it with */")
                self.i = end + 2
            else:
                return

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def value(self, path: Path, depth: int) -> Any:
        self.skip()
        start = self.i
        self.doc.positions[path] = self.pos(start)
        c = self.peek()
        if c and c in "{[":
            if depth >= MAX_DEPTH:
                raise _Fail(
                    start,
                    f"nesting deeper than {MAX_DEPTH} levels",
                    "a rules file is never this deep",
                )
            return self.obj(path, depth + 1) if c == "{" else self.array(path, depth + 1)
        if c and c in "\"'":
            return self.string()
        for word, result in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, start) and not self._ident_char(start + len(word)):
                self.i += len(word)
                return result
        match = _NUMBER.match(self.text, start)
        if match and not self._ident_char(match.end()):
            self.i = match.end()
            if len(match.group()) > MAX_NUMBER_CHARS:
                raise _Fail(
                    start,
                    f"number too long ({len(match.group())} characters; at most "
                    f"{MAX_NUMBER_CHARS})",
                    "rules numbers are thresholds and sizes",
                )
            return _number(match.group())
        if not c:
            raise _Fail(start, "unexpected end of text: a value is missing")
        raise _Fail(
            start,
            f"unexpected character {c!r}: expected a value",
            "strings need quotes; values are objects, arrays, strings, numbers, "
            "true, false or null",
        )

    def _ident_char(self, index: int) -> bool:
        return index < len(self.text) and (self.text[index].isalnum() or self.text[index] in "_$")

    def obj(self, path: Path, depth: int) -> dict[str, Any]:
        self.i += 1
        result: dict[str, Any] = {}
        while True:
            self.skip()
            if self.peek() == "}":
                self.i += 1
                return result
            key_start = self.i
            key = self.key()
            key_path = path + (key,)
            if key in result:
                first = self.doc.key_positions.get(key_path, (0, 0))
                self.doc.error(
                    self.pos(key_start),
                    f"duplicate key {key!r} (first defined at line {first[0]})",
                    "only the last value is kept; remove one of them",
                    "duplicate-key",
                )
            self.doc.key_positions[key_path] = self.pos(key_start)
            self.skip()
            if self.peek() != ":":
                raise _Fail(self.i, f"expected ':' after key {key!r}")
            self.i += 1
            result[key] = self.value(key_path, depth)
            if not self.separator("}"):
                return result

    def array(self, path: Path, depth: int) -> list[Any]:
        self.i += 1
        result: list[Any] = []
        while True:
            self.skip()
            if self.peek() == "]":
                self.i += 1
                return result
            result.append(self.value(path + (len(result),), depth))
            if not self.separator("]"):
                return result

    def separator(self, closing: str) -> bool:
        """After an item: consume `,` (True: more may follow) or the closing bracket (False)."""
        self.skip()
        c = self.peek()
        if c == ",":
            self.i += 1
            return True
        if c == closing:
            self.i += 1
            return False
        shown = repr(c) if c else "end of text"
        raise _Fail(
            self.i,
            f"expected ',' or {closing!r}, found {shown}",
            "separate items with commas and close every bracket",
        )

    def key(self) -> str:
        c = self.peek()
        if c and c in "\"'":
            return self.string()
        start = self.i
        if c and (c.isalpha() or c in "_$"):
            while self._ident_char(self.i):
                self.i += 1
            return self.text[start : self.i]
        shown = repr(c) if c else "end of text"
        raise _Fail(start, f"expected a key, found {shown}", "keys are names or quoted strings")

    def string(self) -> str:
        quote = self.text[self.i]
        start = self.i
        self.i += 1
        parts: list[str] = []
        text, n = self.text, len(self.text)
        while True:
            if self.i >= n:
                raise _Fail(start, "unterminated string", f"close it with {quote}")
            c = text[self.i]
            if c == quote:
                self.i += 1
                return "".join(parts)
            if c in _NEWLINES:
                raise _Fail(self.i, "line break inside a string", "use \\n or close the string")
            if c == "\\":
                parts.append(self.escape())
                continue
            parts.append(c)
            self.i += 1

    def escape(self) -> str:
        self.i += 1
        c = self.peek()
        if not c:
            raise _Fail(self.i, "unterminated string")
        self.i += 1
        if c in "xu":
            size = 2 if c == "x" else 4
            digits = self.text[self.i : self.i + size]
            if len(digits) != size or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise _Fail(self.i - 2, f"bad escape \\{c}{digits}")
            self.i += size
            return self.unicode_escape(int(digits, 16)) if c == "u" else chr(int(digits, 16))
        if c == "\r" and self.peek() == "\n":
            self.i += 1
            return ""
        if c in _NEWLINES:
            return ""
        return _ESCAPES.get(c, c)

    def unicode_escape(self, code: int) -> str:
        """A `\\uXXXX` escape: a surrogate pair becomes one character, a lone half is an error."""
        if 0xDC00 <= code <= 0xDFFF:
            raise _Fail(
                self.i - 6,
                f"lone surrogate \\u{code:04x} (half of a character)",
                "escape a character outside the BMP as a pair, e.g. \\ud83d\\ude00",
            )
        if 0xD800 <= code <= 0xDBFF:
            low = self.text[self.i + 2 : self.i + 6] if self.text.startswith("\\u", self.i) else ""
            if (
                len(low) == 4
                and all(d in "0123456789abcdefABCDEF" for d in low)
                and 0xDC00 <= int(low, 16) <= 0xDFFF
            ):
                self.i += 6
                return chr(0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00))
            raise _Fail(
                self.i - 6,
                f"lone surrogate \\u{code:04x} (half of a character)",
                "escape a character outside the BMP as a pair, e.g. \\ud83d\\ude00",
            )
        return chr(code)


def _number(text: str) -> int | float:
    body = text.lstrip("+-")
    sign = -1 if text.startswith("-") else 1
    if body in ("Infinity", "NaN"):
        return sign * float("inf") if body == "Infinity" else float("nan")
    if body[:2] in ("0x", "0X"):
        return sign * int(body[2:], 16)
    if any(ch in body for ch in ".eE"):
        return sign * float(body)
    return sign * int(body, 10)


def load_json5(text: str, name: str) -> SourceDoc:
    """Every top-level JSON5 value of `text`; `data` is their list, paths start with the index."""
    doc = SourceDoc(name, [])
    reader = _Reader(text, doc)
    try:
        reader.skip()
        while reader.i < len(text):
            doc.data.append(reader.value((len(doc.data),), 0))
            reader.skip()
    except _Fail as exc:
        doc.error(
            reader.pos(exc.index), f"JSON5 syntax error: {exc.message}", exc.hint, "json5-syntax"
        )
    return doc


def looks_like_json5(text: str) -> bool:
    """Does the text start (after spaces and comments) with `{`, or with a `//` comment?"""
    stripped = text.lstrip(_SPACE)
    return stripped.startswith(("{", "//", "/*"))


def progress(doc: SourceDoc) -> Pos:
    """How far a parse got before its first error (for choosing between two syntaxes)."""
    errors = [(f.line, f.col) for f in doc.findings if f.level == "error"]
    return min(errors) if errors else (10**9, 0)
