"""Rules text into native keys (`parse_text`): JSON5 read with positions, OpenClaw translated.

The JSON5 reader keeps the line:col of every value and key, with the limits of `config.source`.
Several top-level values may follow each other (OpenClaw's documentation shows two blocks, which
json-five, the JSON5 package that keeps positions, refuses); `data` is then their list, and paths
start with the value's index. `translate` turns OpenClaw blocks (JSON5 or YAML) into native keys,
later blocks over earlier ones; `merge_embedded` does the same for a block pasted into a native
rules mapping, where the native key wins. Which texts are JSON5, the keys, and what is an error
or ignored: docs/rules.md, "The OpenClaw block, as written".
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator
from typing import Any

from loopguard.config.source import (
    SURROGATE,
    Path,
    Pos,
    SourceDoc,
    Stop,
    check_depth,
    check_values,
    copy_tree,
    deep_merge,
    load_yaml,
    long_number,
    text_position,
)
from loopguard.detection.plugins import registry_or_none
from loopguard.findings import Finding, codes
from loopguard.text.hints import did_you_mean

_SPACE = " \t\n\r\v\f\u00a0\ufeff\u2028\u2029"
_NEWLINES = "\n\r\u2028\u2029"
# Spaces and comments; an unterminated `/*` is left for `_Reader.skip` to report.
_SKIP = re.compile(rf"(?:[{_SPACE}]+|//[^{_NEWLINES}]*|/\*.*?\*/)*", re.DOTALL)
_LITERAL = re.compile(  # true/false/null or a number (the reader then refuses a name after it)
    r"true|false|null|[+-]?(?:Infinity|NaN|0[xX][0-9a-fA-F]+"
    r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
)
_WORDS = {"true": True, "false": False, "null": None}
_NAME = re.compile(r"[\w$]+")
_STRING_STOPS = {q: re.compile(rf"[{q}\\{_NEWLINES}]") for q in "'\""}
# What follows a backslash: a line break, hex digits (a surrogate pair together), any character.
_ESCAPE = re.compile(
    r"\\(\r\n|x[0-9a-fA-F]{2}|u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    r"|u[0-9a-fA-F]{4}|.)",
    re.DOTALL,
)
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "0": "\0", "\r\n": ""}
_ESCAPES.update(dict.fromkeys(_NEWLINES, ""))  # an escaped line break continues the string
_VALUE_HINT = (
    "strings need quotes; values are objects, arrays, strings, numbers, true, false or null"
)
_PAIR_HINT = "escape a character outside the BMP as a pair, e.g. \\ud83d\\ude00"

CODES = codes(  # the codes raised here (the table's form: `findings.codes`)
    """
json5-syntax error syntax
    The JSON5 (OpenClaw) file does not parse.

    Fails: `{tools: {loopDetection: {enabled: true,}`.
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


class _Reader:
    def __init__(self, text: str, doc: SourceDoc) -> None:
        self.text, self.doc, self.i = text, doc, 0
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\r\n|[\n\r\u2028\u2029]", text)]

    def pos(self, index: int) -> Pos:
        line = bisect.bisect_right(self.line_starts, index)
        return line, index - self.line_starts[line - 1] + 1

    def fail(self, index: int, message: str, hint: str = "") -> Stop:
        return Stop(self.pos(index), message, hint)

    def skip(self) -> str:
        """Skip spaces and comments; the next character ("" at the end)."""
        self.i = _SKIP.match(self.text, self.i).end()  # type: ignore[union-attr]
        if self.text.startswith("/*", self.i):
            raise self.fail(self.i, "unterminated /* comment", "close it with */")
        return self.text[self.i : self.i + 1]

    def value(self, path: Path, depth: int) -> Any:
        c, start = self.skip(), self.i
        self.doc.positions[path] = self.pos(start)
        if c == "{" or c == "[":
            check_depth(depth, self.pos(start), "a rules file is never this deep")
            return self.obj(path, depth) if c == "{" else self.array(path, depth)
        if c in ("'", '"'):
            return self.string()
        match = _LITERAL.match(self.text, start)
        if match and not _NAME.match(self.text, match.end()):
            token, self.i = match.group(), match.end()
            if token in _WORDS:
                return _WORDS[token]
            if too_long := long_number(token, self.pos(start)):
                raise too_long
            body = token.lstrip("+-")  # float() reads Infinity and NaN
            if body.isdigit():
                return int(token)
            return int(token, 16) if body[:2] in ("0x", "0X") else float(token)
        if not c:
            raise self.fail(start, "unexpected end of text: a value is missing")
        raise self.fail(start, f"unexpected character {c!r}: expected a value", _VALUE_HINT)

    def items(self, closing: str) -> Iterator[str]:
        """Enter the bracket at `i`; yield the first character of each item up to `closing`."""
        self.i += 1
        c = self.skip()
        while c != closing:
            yield c
            c = self.skip()
            if c == ",":
                self.i += 1
                c = self.skip()
            elif c != closing:
                message = f"expected ',' or {closing!r}, found {repr(c) if c else 'end of text'}"
                hint = "separate items with commas and close every bracket"
                raise self.fail(self.i, message, hint)
        self.i += 1

    def obj(self, path: Path, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for c in self.items("}"):
            where, name = self.pos(self.i), _NAME.match(self.text, self.i)
            if c in ("'", '"'):
                key = self.string()
            elif name and (c.isalpha() or c in "_$"):
                key, self.i = name.group(), name.end()
            else:
                message = f"expected a key, found {repr(c) if c else 'end of text'}"
                raise self.fail(self.i, message, "keys are names or quoted strings")
            hint = "only the last value is kept; remove one of them"
            self.doc.note_key(path + (key,), where, key in result, hint, crumb=False)
            if self.skip() != ":":
                raise self.fail(self.i, f"expected ':' after key {key!r}")
            self.i += 1
            result[key] = self.value(path + (key,), depth + 1)
        return result

    def array(self, path: Path, depth: int) -> list[Any]:
        result: list[Any] = []
        for _ in self.items("]"):
            result.append(self.value(path + (len(result),), depth + 1))
        return result

    def string(self) -> str:
        start, quote = self.i, self.text[self.i]
        self.i += 1
        parts: list[str] = []
        while stop := _STRING_STOPS[quote].search(self.text, self.i):
            parts.append(self.text[self.i : stop.start()])
            self.i = stop.start()
            if stop.group() == quote:
                self.i += 1
                return "".join(parts)
            if stop.group() != "\\":
                raise self.fail(self.i, "line break inside a string", "use \\n or close the string")
            parts.append(self.escape())
        raise self.fail(start, "unterminated string", f"close it with {quote}")

    def escape(self) -> str:
        """The escape at `i` (a backslash): its character, "" for an escaped line break; a
        `\\uXXXX` surrogate pair becomes one character, a lone half is an error."""
        start, match = self.i, _ESCAPE.match(self.text, self.i)
        if not match:
            raise self.fail(start + 1, "unterminated string")
        escaped, self.i = match.group(1), match.end()
        if escaped in ("x", "u"):  # not followed by its hex digits
            digits = self.text[self.i : self.i + (2 if escaped == "x" else 4)]
            raise self.fail(start, f"bad escape \\{escaped}{digits}")
        if len(escaped) < 3:
            return _ESCAPES.get(escaped, escaped)
        code = int(escaped[1:5], 16)
        if len(escaped) > 5:
            return chr(0x10000 + ((code - 0xD800) << 10) + int(escaped[7:], 16) - 0xDC00)
        if escaped[0] == "u" and 0xD800 <= code <= 0xDFFF:
            message = f"lone surrogate \\u{code:04x} (half of a character)"
            raise self.fail(start, message, _PAIR_HINT)
        return chr(code)


def load_json5(text: str, name: str) -> SourceDoc:
    """Every top-level JSON5 value of `text`; `data` is their list, paths start with the index."""
    doc = SourceDoc(name, [])
    reader = _Reader(text, doc)
    try:
        while reader.skip():
            doc.data.append(reader.value((len(doc.data),), 0))
    except Stop as stop:
        pos, message, hint, _ = stop.args
        doc.error(pos, f"JSON5 syntax error: {message}", hint, "json5-syntax")
    return doc


def _progress(doc: SourceDoc) -> Pos:
    """How far a parse got before its first error (for choosing between two syntaxes)."""
    errors = [(f.line, f.col) for f in doc.findings if f.level == "error"]
    return min(errors) if errors else (10**9, 0)


# The settings of `loopDetection` (each means the native key in snake_case), and its mappings.
LOOP_KEYS = (
    "enabled historySize warningThreshold criticalThreshold unknownToolThreshold "
    "globalCircuitBreakerThreshold detectors postCompactionGuard"
).split()
# Top-level keys only a native rules file has (OpenClaw's own config shares `messages`).
NATIVE_MARKS = (
    "version extends loop_detection detectors keyword_sets intents aggregator outcomes".split()
)


def snake_case(name: str) -> str:
    """`knownPollNoProgress` -> `known_poll_no_progress`."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def is_openclaw(value: Any) -> bool:
    """A mapping shaped like an OpenClaw config (and not a native rules file)."""
    if not isinstance(value, dict) or any(key in value for key in NATIVE_MARKS):
        return False
    tools, agents = value.get("tools"), value.get("agents")
    return (isinstance(tools, dict) and "loopDetection" in tools) or (
        isinstance(agents, dict) and "list" in agents
    )


def _fill(native: Any, extra: Any, path: Path, conflicts: list[Path]) -> Any:
    """`native` with what only `extra` sets added; paths both set differently in `conflicts`."""
    if not (isinstance(native, dict) and isinstance(extra, dict)):
        if type(native) is not type(extra) or native != extra:
            conflicts.append(path)
        return native
    out = dict(native)
    for key, value in extra.items():
        out[key] = value if key not in out else _fill(out[key], value, path + (key,), conflicts)
    return out


def _shown(node: Any, path: Path) -> str:
    """The value at `path` as JSON, cut to 40 characters."""
    for step in path:
        node = node.get(step) if isinstance(node, dict) else None
    text = json.dumps(node, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def merge_embedded(doc: SourceDoc) -> SourceDoc:
    """`doc` (native rules) with its pasted OpenClaw block (`tools`, and `agents.list` if it is
    a list) translated and merged in. Native keys win, each with an `openclaw-conflict` warning
    at the OpenClaw value it overrides; a doc without such a block is returned as it is."""
    data = doc.data
    if not isinstance(data, dict) or is_openclaw(data):
        return doc
    part = {"tools": data["tools"]} if "tools" in data else {}
    if isinstance(data.get("agents"), dict) and isinstance(data["agents"].get("list"), list):
        part["agents"] = {"list": data["agents"]["list"]}
    if not part:
        return doc
    translated = translate(doc, [((), part)])
    added = dict(translated.data)
    added.pop("version", None)  # a native file says its own version (or lint says it is missing)
    native = {k: v for k, v in data.items() if k != "tools"}
    cut: set[Path] = {("tools",)} if "tools" in part else set()
    if "agents" in part:
        cut.add(("agents", "list"))
        native["agents"] = {k: v for k, v in native["agents"].items() if k != "list"}
        if not native["agents"]:
            del native["agents"]
    kept, kept_keys = (
        {p: v for p, v in positions.items() if p[:1] not in cut and p[:2] not in cut}
        for positions in (doc.positions, doc.key_positions)
    )
    conflicts: list[Path] = []
    out = SourceDoc(doc.name, _fill(native, added, (), conflicts), findings=translated.findings)
    out.positions = {**translated.positions, **kept}
    out.key_positions = {**translated.key_positions, **kept_keys}
    out.display = {p: v for p, v in translated.display.items() if p not in kept}
    hint = "the loopguard key wins over the OpenClaw block; remove one of the two"
    for path in conflicts:
        dotted = ".".join(map(str, path))
        shown = translated.display.get(path, dotted)
        message = (
            f"{shown} ({_shown(added, path)}) is overridden by {dotted} ({_shown(native, path)})"
            f" on line {kept.get(path, (0, 0))[0]}"
        )
        line, col = translated.positions.get(path, (1, 1))
        out.findings.append(
            Finding(doc.name, line, col, "warning", message, shown, hint, "openclaw-conflict")
        )
    return out


class _Translator:
    """Writes the native keys OpenClaw blocks mean into `out`, in the order they are read."""

    def __init__(self, source: SourceDoc) -> None:
        self.src = source
        self.out = SourceDoc(source.name, {"version": 1}, findings=list(source.findings))

    def note(self, native: Path, src: Path, shown: str) -> None:
        """Note that `native` comes from `src`, written `shown`."""
        self.out.positions[native] = self.src.positions.get(src, (1, 1))
        if src in self.src.key_positions:
            self.out.key_positions[native] = self.src.key_positions[src]
        self.out.display[native] = shown

    def put(self, native: Path, value: Any, src: Path, shown: str) -> None:
        """Set `native` to `value` (merged into a mapping already there, as layers merge)."""
        self.note(native, src, shown)
        node = self.out.data
        for step in native[:-1]:
            node = node.setdefault(step, {})
        current = node.get(native[-1])
        merge = isinstance(current, dict) and isinstance(value, dict)
        node[native[-1]] = deep_merge(current, value) if merge else copy_tree(value)

    def report(self, src: Path, code: str, message: str, shown: str, hint: str = "") -> None:
        """A finding at the source value, named the way the user wrote it; the two key problems
        (`unknown-key`, and `openclaw-ignored`, the one warning) point at the key."""
        level = "warning" if code == "openclaw-ignored" else "error"
        at_key = code in ("openclaw-ignored", "unknown-key") and src in self.src.key_positions
        line, col = (self.src.key_positions if at_key else self.src.positions).get(src, (1, 1))
        self.out.findings.append(
            Finding(self.src.name, line, col, level, message, shown, hint, code)
        )

    def ignore(self, src: Path, shown: str) -> None:
        message = f"{shown} is ignored: not a loop-detection setting"
        hint = "only tools.loopDetection and agents.list[].tools.loopDetection are read"
        self.report(src, "openclaw-ignored", message, shown, hint)

    def items(self, value: Any, src: Path, shown: str, native: Path = ()) -> list[Any]:
        """A mapping's (key, value, path, shown name)s or a type error; `native` notes its start."""
        if not isinstance(value, dict):
            self.report(src, "type", "expected a mapping", shown)
            return []
        if native:
            self.note(native, src, shown)
        return [(key, item, src + (key,), f"{shown}.{key}") for key, item in value.items()]

    def block(self, value: Any, src: Path, shown: str, prefix: Path, native: Path) -> None:
        """A `loopDetection` mapping (or its `postCompactionGuard`), in native keys at `native`
        (`prefix` is the scope's)."""
        known = LOOP_KEYS if native == prefix + ("loop_detection",) else ["windowSize"]
        for key, item, at, here in self.items(value, src, shown, native):
            if key not in known:
                message = f"unknown key {key!r}{did_you_mean(key, known)}"
                self.report(at, "unknown-key", message, here, f"allowed keys: {', '.join(known)}")
            elif key == "postCompactionGuard":
                self.block(item, at, here, prefix, native + ("post_compaction_guard",))
            elif key == "detectors":
                self.detectors(item, at, here, prefix + ("detectors",))
            else:
                self.put(native + (snake_case(key),), item, at, here)

    def detectors(self, value: Any, src: Path, shown: str, native: Path) -> None:
        """`name: B` -> `<id>.enabled: B`, for the detector that declares that `openclaw_name`
        (`Detector.openclaw_name`); a name no detector declares is read as snake_case."""
        # (no registry, a broken plugin setup: the snake_case rule alone)
        registry = registry_or_none() if isinstance(value, dict) else None
        entries = registry.entries if registry is not None else ()
        named = {name: entry.id for entry in entries if (name := entry.detector.openclaw_name)}
        for key, item, at, here in self.items(value, src, shown):
            self.note(native + (ident := named.get(key) or snake_case(key),), at, here)
            self.put(native + (ident, "enabled"), item, at, here)

    def tools(self, value: Any, src: Path, shown: str, prefix: Path) -> None:
        for key, item, at, here in self.items(value, src, shown):
            if key == "loopDetection":
                self.block(item, at, here, prefix, prefix + ("loop_detection",))
            else:
                self.ignore(at, here)

    def agents(self, value: Any, src: Path) -> None:
        for key, _, at, here in self.items(value, src, "agents"):
            if key != "list":
                self.ignore(at, here)
        entries = value.get("list", []) if isinstance(value, dict) else []
        if not isinstance(entries, list):
            self.report(src + ("list",), "type", "expected a list", "agents.list")
            return
        seen: set[str] = set()
        for i, entry in enumerate(entries):
            at = src + ("list", i)
            ident = entry.get("id") if isinstance(entry, dict) else None
            if not isinstance(ident, str) or not ident:
                message = "an agent in agents.list needs an `id` string"
                self.report(at, "openclaw-agent", message, f"agents.list[{i}]", 'add id: "name"')
                continue
            shown = f"agents.list.{ident}"
            if ident in seen:
                message, hint = f"agent {ident!r} is listed twice", "merge the two entries"
                self.report(at + ("id",), "duplicate-agent", message, shown, hint)
            seen.add(ident)
            self.put(("agents", ident), {}, at, shown)
            for key, item, key_at, here in self.items(entry, at, shown):
                if key == "tools":
                    self.tools(item, key_at, here, ("agents", ident))
                elif key != "id":
                    self.ignore(key_at, here)


def translate(source: SourceDoc, blocks: list[tuple[Path, Any]]) -> SourceDoc:
    """A native rules document from OpenClaw blocks (each `(path prefix, mapping)`), later blocks
    over earlier ones."""
    translator = _Translator(source)
    for prefix, block in blocks:
        for key, item in block.items():
            if key == "tools":
                translator.tools(item, prefix + (key,), "tools", ())
            elif key == "agents":
                translator.agents(item, prefix + (key,))
            else:
                translator.ignore(prefix + (key,), key)
    translator.out.positions[()] = (1, 1)
    return translator.out


def _native_from_json5(doc: SourceDoc) -> SourceDoc:
    blocks: list[Any] = doc.data
    if doc.has_errors or not blocks:
        doc.data = None
        return doc
    if len(blocks) > 1 or is_openclaw(blocks[0]):
        if all(is_openclaw(b) for b in blocks):
            return translate(doc, [((i,), b) for i, b in enumerate(blocks)])
        hint = "only OpenClaw blocks ({ tools: ... } / { agents: ... }) may follow each other"
        where = doc.positions.get((1,), (1, 1))
        doc.error(where, "more than one top-level value", hint, "multiple-documents")
        doc.data = None
        return doc
    positions, keys = ({p[1:]: v for p, v in t.items()} for t in (doc.positions, doc.key_positions))
    return merge_embedded(SourceDoc(doc.name, blocks[0], positions, keys, doc.findings))


def _native_from_yaml(doc: SourceDoc) -> SourceDoc:
    if doc.has_errors:
        return doc
    if is_openclaw(doc.data):
        return translate(doc, [((), doc.data)])
    return merge_embedded(doc)


def parse_text(text: str, name: str) -> SourceDoc:
    """Parse YAML or JSON5 rules text into native keys (problems in `findings`).

    Text with a lone surrogate is refused before parsing; parsed values are then
    checked by `source.check_values` (integer range, surrogates from escapes).
    """
    doc = SourceDoc(name)
    if found := SURROGATE.search(text):
        message = f"lone surrogate U+{ord(found.group()):04X} (half of a character) in the text"
        hint = "rules text must be valid Unicode; fix the character"
        doc.error(text_position(text, found.start()), message, hint, "encoding")
        return doc
    if name.lower().endswith((".json5", ".json")):
        doc = _native_from_json5(load_json5(text, name))
    elif not text.lstrip(_SPACE).startswith(("{", "//", "/*")):  # no `{` or comment first
        doc = _native_from_yaml(load_yaml(text, name))
    else:
        as_json5 = load_json5(text, name)
        as_yaml = load_yaml(text, name) if as_json5.has_errors else None
        if as_yaml is None or (as_yaml.has_errors and _progress(as_json5) >= _progress(as_yaml)):
            doc = _native_from_json5(as_json5)
        else:
            doc = _native_from_yaml(as_yaml)
    if doc.data is not None:
        check_values(doc)
    return doc
