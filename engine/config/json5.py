"""JSON5 rules text and the OpenClaw block it usually holds.

A small JSON5 reader that keeps the line:col of every value.

The OpenClaw configuration blocks users paste are JSON5: unquoted keys,
`//` and `/* */` comments, single- or double-quoted strings, trailing commas.
There is no JSON5 package in loopguard's dependencies, so this reads the
subset those blocks use: objects, arrays, strings, numbers (decimal, hex,
`Infinity`, `NaN`, a leading `+`), `true`/`false`/`null`. Several top-level
values may follow each other (the seed shows two blocks one after another);
`data` is then the list of them, and paths start with the block's index.
Nesting is bounded by `MAX_DEPTH`, so no input can overflow the stack.

The OpenClaw `tools.loopDetection` block, translated into native rules keys.

Users paste the block from the OpenClaw documentation as written (JSON5 or
YAML). It means exactly the native keys:

    tools.loopDetection.enabled                      -> loop_detection.enabled
    tools.loopDetection.historySize                  -> loop_detection.history_size
    ...Threshold (warning, critical, unknownTool,
       globalCircuitBreaker)                         -> loop_detection.<snake_case>
    tools.loopDetection.postCompactionGuard.windowSize
                                      -> loop_detection.post_compaction_guard.window_size
    tools.loopDetection.detectors.genericRepeat: B   -> detectors.generic_repeat.enabled: B
       (the detector that declares `openclaw_name = "genericRepeat"`; else snake_case)
    agents.list[{id: A, tools: {loopDetection: X}}]  -> agents.A.{loop_detection, detectors}

Several blocks may follow each other; later blocks override earlier ones key
by key. Unknown keys inside `loopDetection` are errors (with "did you mean");
other OpenClaw settings around it (`tools.exec`, an agent's `model` ...) are
not loop-detection settings and are ignored with a warning, so a whole
OpenClaw config can be pasted.

The same block pasted into a native rules mapping (one with `version`,
`extends`, `loop_detection` ...) is translated the same way and merged with
the native keys (`merge_embedded`). Where both set the same value, the native
key wins and an `openclaw-conflict` warning points at the OpenClaw value.
"""

from __future__ import annotations

import bisect
import json
import re
from typing import Any

from loopguard.config.source import Path, Pos, SourceDoc, deep_merge
from loopguard.detection.plugins import load_registry
from loopguard.findings import Finding, codes
from loopguard.text.hints import did_you_mean

MAX_DEPTH = 100
MAX_NUMBER_CHARS = 64  # a longer literal is no threshold (and int() refuses > 4,300 digits)
_SPACE = " \t\n\r\v\f\u00a0\ufeff\u2028\u2029"
_NUMBER = re.compile(
    r"[+-]?(?:Infinity|NaN|0[xX][0-9a-fA-F]+|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
)
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "0": "\0"}
_NEWLINES = "\n\r\u2028\u2029"


# The codes raised here: `code level stage` and what it means, as `lint --list-checks`
# and docs/rules.md document them
CODES = codes(
    """
json5-syntax error syntax
    The JSON5 (OpenClaw) file does not parse.

    Fails: `{tools: {loopDetection: {enabled: true,}`.
"""
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


LOOP_KEYS = {
    "enabled": "enabled",
    "historySize": "history_size",
    "warningThreshold": "warning_threshold",
    "criticalThreshold": "critical_threshold",
    "unknownToolThreshold": "unknown_tool_threshold",
    "globalCircuitBreakerThreshold": "global_circuit_breaker_threshold",
}
NESTED_KEYS = ("detectors", "postCompactionGuard")
GUARD_KEYS = {"windowSize": "window_size"}


# The codes raised here: `code level stage` and what it means, as `lint --list-checks`
# and docs/rules.md document them
CODES += codes(
    """
openclaw-agent error schema
    An OpenClaw `agents.list` entry without an `id`.

    Fails: `agents: {list: [{tools: {}}]}`.
duplicate-agent error schema
    An OpenClaw agent listed twice.

    Fails: two entries with `id: ops`.
openclaw-ignored warning schema
    An OpenClaw key loopguard does not read (only loop-detection settings are).

    Warns: `tools: {exec: {...}}`.
openclaw-conflict warning schema
    An OpenClaw block inside a native rules file sets a value its native keys set
    differently; the native key wins.

    Warns: `loop_detection: {warning_threshold: 8}` and `tools: {loopDetection:
    {warningThreshold: 10}}`.
"""
)


def snake_case(name: str) -> str:
    """`knownPollNoProgress` -> `known_poll_no_progress`."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def openclaw_ids() -> dict[str, str]:
    """OpenClaw detector name -> detector id, as each registered detector declares it
    (`Detector.openclaw_name`); a name no detector declares is read as snake_case."""
    try:
        entries = load_registry().entries
    except Exception:  # noqa: BLE001 - a broken plugin setup leaves the snake_case rule
        return {}
    return {name: entry.id for entry in entries if (name := entry.detector.openclaw_name)}


# Top-level keys only a native rules file has (OpenClaw's own config shares `messages`).
NATIVE_MARKS = (
    "version",
    "extends",
    "loop_detection",
    "detectors",
    "keyword_sets",
    "intents",
    "aggregator",
    "outcomes",
)


def is_openclaw(value: Any) -> bool:
    """A mapping shaped like an OpenClaw config (and not a native rules file)."""
    if not isinstance(value, dict) or any(key in value for key in NATIVE_MARKS):
        return False
    tools, agents = value.get("tools"), value.get("agents")
    return (isinstance(tools, dict) and "loopDetection" in tools) or (
        isinstance(agents, dict) and "list" in agents
    )


def _embedded(value: Any) -> dict[str, Any]:
    """The OpenClaw parts of a native rules mapping: `tools`, and `agents.list` (a list)."""
    if not isinstance(value, dict) or is_openclaw(value):
        return {}
    part: dict[str, Any] = {}
    if "tools" in value:
        part["tools"] = value["tools"]
    agents = value.get("agents")
    if isinstance(agents, dict) and isinstance(agents.get("list"), list):
        part["agents"] = {"list": agents["list"]}
    return part


def _is_embedded_path(path: Path, part: dict[str, Any]) -> bool:
    if "tools" in part and path[:1] == ("tools",):
        return True
    return "agents" in part and path[:2] == ("agents", "list")


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _fill(native: Any, extra: Any, path: Path, conflicts: list[Path]) -> Any:
    """`native` with what only `extra` sets added; paths both set differently in `conflicts`."""
    if not (isinstance(native, dict) and isinstance(extra, dict)):
        if not _same(native, extra):
            conflicts.append(path)
        return native
    out = dict(native)
    for key, value in extra.items():
        out[key] = value if key not in out else _fill(out[key], value, path + (key,), conflicts)
    return out


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def merge_embedded(doc: SourceDoc) -> SourceDoc:
    """A native rules doc with its pasted OpenClaw block translated and merged in.

    Native keys win where both set a value; each such value gets an `openclaw-conflict`
    warning at the OpenClaw value, naming the native one. A doc without an OpenClaw
    block is returned as it is.
    """
    part = _embedded(doc.data)
    if not part:
        return doc
    translated = _Translator(doc).translate([((), part)])
    added = dict(translated.data)
    added.pop("version", None)  # a native file says its own version (or lint says it is missing)
    native = {k: v for k, v in doc.data.items() if k != "tools"}
    if "agents" in part:
        native["agents"] = {k: v for k, v in native["agents"].items() if k != "list"}
        if not native["agents"]:
            del native["agents"]
    kept = {p: v for p, v in doc.positions.items() if not _is_embedded_path(p, part)}
    kept_keys = {p: v for p, v in doc.key_positions.items() if not _is_embedded_path(p, part)}
    conflicts: list[Path] = []
    out = SourceDoc(doc.name, _fill(native, added, (), conflicts), findings=translated.findings)
    out.positions = {**translated.positions, **kept}
    out.key_positions = {**translated.key_positions, **kept_keys}
    out.display = {p: v for p, v in translated.display.items() if p not in kept}
    for path in conflicts:
        theirs, ours = _descend_value(added, path), _descend_value(native, path)
        shown = translated.display.get(path, ".".join(map(str, path)))
        line = kept.get(path, (0, 0))[0]
        out.findings.append(
            Finding(
                doc.name,
                *translated.positions.get(path, (1, 1)),
                "warning",
                f"{shown} ({_shown(theirs)}) is overridden by {'.'.join(map(str, path))} "
                f"({_shown(ours)}) on line {line}",
                shown,
                "the loopguard key wins over the OpenClaw block; remove one of the two",
                "openclaw-conflict",
            )
        )
    return out


def _descend_value(node: Any, path: Path) -> Any:
    for step in path:
        node = node.get(step) if isinstance(node, dict) else None
    return node


class _Translator:
    def __init__(self, source: SourceDoc) -> None:
        self.src = source
        self.out = SourceDoc(source.name, {"version": 1}, findings=list(source.findings))

    def put(self, native: Path, value: Any, src: Path, shown: str) -> dict[str, Any]:
        """Map one source value to its native path (a mapping of the parents is created)."""
        self.out.positions[native] = self.src.positions.get(src, (1, 1))
        if src in self.src.key_positions:
            self.out.key_positions[native] = self.src.key_positions[src]
        self.out.display[native] = shown
        nested: dict[str, Any] = {}
        node = nested
        for step in native[:-1]:
            node = node.setdefault(step, {})
        node[native[-1]] = value
        return nested

    def report(self, level: str, pos: Pos, message: str, shown: str, hint: str, code: str) -> None:
        """A finding placed in the source text and named the way the user wrote it."""
        self.out.findings.append(
            Finding(self.src.name, pos[0], pos[1], level, message, shown, hint, code)
        )

    def where(self, src: Path, at_key: bool = False) -> Pos:
        if at_key and src in self.src.key_positions:
            return self.src.key_positions[src]
        return self.src.positions.get(src, (1, 1))

    def ignore(self, src: Path, shown: str) -> None:
        self.report(
            "warning",
            self.where(src, True),
            f"{shown} is ignored: not a loop-detection setting",
            shown,
            "only tools.loopDetection and agents.list[].tools.loopDetection are read",
            "openclaw-ignored",
        )

    def unknown(self, src: Path, key: str, shown: str, known: list[str]) -> None:
        self.report(
            "error",
            self.where(src, True),
            f"unknown key {key!r}{did_you_mean(key, known)}",
            shown,
            f"allowed keys: {', '.join(known)}",
            "unknown-key",
        )

    def type_error(self, src: Path, shown: str, expected: str) -> None:
        self.report("error", self.where(src), f"expected {expected}", shown, "", "type")

    def block(self, value: Any, src: Path, shown: str, prefix: Path) -> dict[str, Any]:
        """Translate one `loopDetection` mapping into native keys under `prefix`."""
        result: dict[str, Any] = {}
        if not isinstance(value, dict):
            self.type_error(src, shown, "a mapping")
            return result
        self.put(prefix + ("loop_detection",), {}, src, shown)  # where the block starts
        for key, item in value.items():
            at, here = src + (key,), f"{shown}.{key}"
            if key in LOOP_KEYS:
                part = self.put(prefix + ("loop_detection", LOOP_KEYS[key]), item, at, here)
            elif key == "postCompactionGuard":
                part = self.guard(item, at, here, prefix)
            elif key == "detectors":
                part = self.detectors(item, at, here, prefix)
            else:
                self.unknown(at, key, here, [*LOOP_KEYS, *NESTED_KEYS])
                continue
            result = deep_merge(result, part)
        return result

    def guard(self, value: Any, src: Path, shown: str, prefix: Path) -> dict[str, Any]:
        result: dict[str, Any] = {}
        native = prefix + ("loop_detection", "post_compaction_guard")
        if not isinstance(value, dict):
            self.type_error(src, shown, "a mapping")
            return result
        self.put(native, {}, src, shown)
        for key, item in value.items():
            if key not in GUARD_KEYS:
                self.unknown(src + (key,), key, f"{shown}.{key}", list(GUARD_KEYS))
                continue
            result = deep_merge(
                result, self.put(native + (GUARD_KEYS[key],), item, src + (key,), f"{shown}.{key}")
            )
        return result

    def detectors(self, value: Any, src: Path, shown: str, prefix: Path) -> dict[str, Any]:
        result: dict[str, Any] = {}
        if not isinstance(value, dict):
            self.type_error(src, shown, "a mapping")
            return result
        named = openclaw_ids()
        for key, item in value.items():
            native = prefix + ("detectors", named.get(key) or snake_case(key))
            self.put(native, {}, src + (key,), f"{shown}.{key}")
            result = deep_merge(
                result, self.put(native + ("enabled",), item, src + (key,), f"{shown}.{key}")
            )
        return result

    def agents(self, value: Any, src: Path) -> dict[str, Any]:
        result: dict[str, Any] = {}
        if not isinstance(value, dict):
            self.type_error(src, "agents", "a mapping")
            return result
        for key in value:
            if key != "list":
                self.ignore(src + (key,), f"agents.{key}")
        entries = value.get("list", [])
        if not isinstance(entries, list):
            self.type_error(src + ("list",), "agents.list", "a list")
            return result
        seen: set[str] = set()
        for i, entry in enumerate(entries):
            at = src + ("list", i)
            ident = entry.get("id") if isinstance(entry, dict) else None
            if not isinstance(ident, str) or not ident:
                self.report(
                    "error",
                    self.where(at),
                    "an agent in agents.list needs an `id` string",
                    f"agents.list[{i}]",
                    'add id: "name"',
                    "openclaw-agent",
                )
                continue
            shown = f"agents.list.{ident}"
            if ident in seen:
                self.report(
                    "error",
                    self.where(at + ("id",)),
                    f"agent {ident!r} is listed twice",
                    shown,
                    "merge the two entries",
                    "duplicate-agent",
                )
            seen.add(ident)
            self.put(("agents", ident), {}, at, shown)
            result = deep_merge(result, {"agents": {ident: {}}})
            for key, item in entry.items():
                if key == "tools" and not isinstance(item, dict):
                    self.type_error(at + (key,), f"{shown}.tools", "a mapping")
                elif key == "tools":
                    result = deep_merge(
                        result,
                        self.tools(item, at + ("tools",), f"{shown}.tools", ("agents", ident)),
                    )
                elif key != "id":
                    self.ignore(at + (key,), f"{shown}.{key}")
        return result

    def tools(self, value: dict[str, Any], src: Path, shown: str, prefix: Path) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, item in value.items():
            if key == "loopDetection":
                result = deep_merge(
                    result, self.block(item, src + (key,), f"{shown}.{key}", prefix)
                )
            else:
                self.ignore(src + (key,), f"{shown}.{key}")
        return result

    def translate(self, blocks: list[tuple[Path, Any]]) -> SourceDoc:
        data: dict[str, Any] = {"version": 1}
        for prefix, block in blocks:
            for key, item in block.items():
                if key == "tools":
                    if not isinstance(item, dict):
                        self.type_error(prefix + (key,), "tools", "a mapping")
                        continue
                    part = self.tools(item, prefix + (key,), "tools", ())
                elif key == "agents":
                    part = self.agents(item, prefix + (key,))
                else:
                    self.ignore(prefix + (key,), key)
                    continue
                data = deep_merge(data, part)
        self.out.data = data
        self.out.positions[()] = (1, 1)
        return self.out


def translate(source: SourceDoc, blocks: list[tuple[Path, Any]]) -> SourceDoc:
    """A native rules document from OpenClaw blocks (each `(path prefix, mapping)`)."""
    return _Translator(source).translate(blocks)
