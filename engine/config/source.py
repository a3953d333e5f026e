"""A rules document's source: values with positions (YAML read here), value checks, the merge rule.

Every reader (`load_yaml` here, `json5.load_json5`, `mapping_doc`) produces a `SourceDoc`: plain
values plus the 1-based line:col where each value and key starts, by path (a tuple of keys and
list indexes); `PositionIndex` places a path of a merged document in the layer that wrote it.
`load_yaml` reads the parser's events in one pass: a `yaml.compose` tree would lose what was found
before a syntax error, and where each alias was written. How YAML is read and the limits:
docs/rules.md, "YAML details". `deep_merge` is the one merge rule and `effective_config` what one
agent runs with (docs/rules.md, "Layers" and "Threshold repair").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

import yaml

from loopguard.findings import Finding, codes
from loopguard.text.hints import is_int

Path = tuple[Any, ...]
Pos = tuple[int, int]

MAX_INT = 2**63 - 1
MAX_DEPTH = 100
MAX_VALUES = 200_000  # values copied from a Python mapping (each place a shared value appears)
MAX_ALIAS_NODES = 100_000
MAX_NUMBER_CHARS = 64  # a longer literal is no threshold (and int() refuses > 4,300 digits)

CODES = codes(  # the codes raised here (the table's form: `findings.codes`)
    r"""
yaml-syntax error syntax
    The YAML does not parse.

    Fails: `turn: {a: 1`.
multiple-documents error syntax
    More than one YAML document (`---`) or top-level JSON5 value.

    Fails: `version: 1\n---\nversion: 1`.
duplicate-key error syntax
    A key written twice in one mapping (YAML would silently keep the last one).

    Fails: `turn: {max_tool_rounds: 3, max_tool_rounds: 4}`.
key-type error syntax
    A mapping key that is not a string.

    Fails: `agents: {1: {}}` (quote it: `'1'`).
yaml-tag error syntax
    An explicit YAML tag (`!!python/...`, `!custom`).

    Fails: `version: !!int 1`.
yaml-alias error syntax
    An undefined, recursive or key alias.

    Fails: `turn: *missing`.
yaml-merge error syntax
    A merge key (`<<`) whose value is not a mapping.

    Fails: `turn: {<<: 3}`.
alias-bomb error syntax
    Aliases expand to too many values (a billion-laughs file).

    Fails: nine levels of `[*a, *a, *a, ...]`.
too-deep error syntax
    Nesting deeper than a rules file ever needs.

    Fails: `[[[[[[...]]]]]]` 200 levels deep.
cycle error syntax
    A mapping given to `Guard.from_dict` that contains itself.

    Fails: `d = {'version': 1}; d['x'] = d`.
"""
)


@dataclass
class SourceDoc:
    """One parsed source: values, positions, the problems met while parsing (and pruning)."""

    name: str
    data: Any = None
    positions: dict[Path, Pos] = field(default_factory=dict)
    key_positions: dict[Path, Pos] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    # Translated documents (OpenClaw blocks) name paths the way the user wrote them.
    display: dict[Path, str] = field(default_factory=dict)
    # What `schema.prune_invalid` left out: the data as written, the paths (as written) it
    # removed, and path now -> path as written (findings name list items as the user sees them).
    original: Any = None
    removed: set[Path] = field(default_factory=set)
    written_paths: dict[Path, Path] = field(default_factory=dict)

    def error(
        self, pos: Pos, message: str, hint: str = "", code: str = "", path: Path = ()
    ) -> None:
        """Record an error at `pos`, naming `path` as a breadcrumb."""
        crumb = breadcrumb(self.data, path, self.display, None) if path else ""
        self.findings.append(Finding(self.name, *pos, "error", message, crumb, hint, code))

    def note_key(self, path: Path, pos: Pos, again: bool, hint: str, crumb: bool = True) -> None:
        """Keep where the key ending `path` is written; `again`, a `duplicate-key` error."""
        if again:
            first = self.key_positions.get(path, (0, 0))[0]
            message = f"duplicate key {path[-1]!r} (first defined at line {first})"
            self.error(pos, message, hint, "duplicate-key", path if crumb else ())
        self.key_positions[path] = pos

    @property
    def has_errors(self) -> bool:
        return any(f.level == "error" for f in self.findings)


class Stop(Exception):
    """Reading cannot go on: the finding to record (`SourceDoc.error`'s arguments)."""

    def __init__(self, pos: Pos, message: str, hint: str = "", code: str = "") -> None:
        super().__init__(pos, message, hint, code)


def check_depth(depth: int, pos: Pos, hint: str) -> None:
    """Stop reading a collection `MAX_DEPTH` levels deep (no input can overflow the stack)."""
    if depth >= MAX_DEPTH:
        raise Stop(pos, f"nesting deeper than {MAX_DEPTH} levels", hint, "too-deep")


def long_number(text: str, pos: Pos) -> Stop | None:
    """The error for a number literal of more than `MAX_NUMBER_CHARS` characters."""
    if len(text) <= MAX_NUMBER_CHARS:
        return None
    message = f"number too long ({len(text)} characters; at most {MAX_NUMBER_CHARS})"
    return Stop(pos, message, "rules numbers are thresholds and sizes", "too-large")


def breadcrumb(data: Any, path: Path, display: dict[Path, str], written: Path | None) -> str:
    """`a.b[2].c`, with list items named by their `id` (or `tool`) when they have one.

    `written` (as long as `path`) is the same path as the user wrote it: a list index
    shown is the one in the file, even when an earlier item was left out (`schema.prune_invalid`).
    """
    shown_steps = written if written is not None and len(written) == len(path) else path
    cut = next((c for c in range(len(path), 0, -1) if path[:c] in display), 0)
    text = display[path[:cut]] if cut else ""  # a translated name, as written
    node = reduce(_child, path[:cut], data)
    for step, shown_step in zip(path[cut:], shown_steps[cut:], strict=True):
        item = _child(node, step)
        if isinstance(step, int):
            listed = isinstance(node, list) and isinstance(item, dict)  # named by `id` or `tool`
            names = [item.get(k) for k in ("id", "tool")] if listed else []
            name = next((n for n in names if isinstance(n, str) and n), None)
            text += f".{name}" if name and text else name if name else f"[{shown_step}]"
        else:
            text += f".{step}" if text else str(step)
        node = item
    return text


def _child(node: Any, step: Any) -> Any:
    if isinstance(node, dict):
        return node.get(step)
    if isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
        return node[step]
    return None


class PositionIndex:
    """Positions across the layers of a merged document (later layers win)."""

    def __init__(self, layers: Sequence[SourceDoc]) -> None:
        self.layers = list(layers)

    def owner(self, path: Path) -> SourceDoc | None:
        """The last layer that wrote a value at `path` (None when no layer did)."""
        for layer in reversed(self.layers):
            if path in layer.positions:
                return layer
        return None

    def finding(
        self, data: Any, path: Path, level: str, message: str, hint: str, code: str, at_key: bool
    ) -> Finding:
        """A finding about `path` of the merged `data`, placed where it was written (its key with
        `at_key`), else where its nearest written ancestor was."""
        layer, (line, col) = (self.layers[-1] if self.layers else SourceDoc("<rules>")), (1, 1)
        for cut in range(len(path), 0, -1):
            if (owner := self.owner(path[:cut])) is not None:
                written = owner.key_positions if at_key and cut == len(path) else owner.positions
                layer, (line, col) = owner, written.get(path[:cut], owner.positions[path[:cut]])
                break
        # `path` as the file wrote it, where values before it were pruned (`schema.prune_invalid`)
        back = layer.written_paths
        cut = next((c for c in range(len(path), 0, -1) if len(back.get(path[:c], ())) == c), 0)
        as_written = back[path[:cut]] + path[cut:] if cut else None
        crumb = breadcrumb(data, path, layer.display, as_written)
        return Finding(layer.name, line, col, level, message, crumb, hint, code)


_STR, _INT, _FLOAT, _BOOL, _NULL, _MERGE, _SEQ, _MAP = (
    f"tag:yaml.org,2002:{name}"
    for name in ("str", "int", "float", "bool", "null", "merge", "seq", "map")
)
# YAML 1.2 core schema: a plain scalar's tag is the first of these it matches, else str
_IMPLICIT = {
    _BOOL: re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    _INT: re.compile(r"^(?:[-+]?[0-9]+|0x[0-9a-fA-F]+)$"),
    _FLOAT: re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    _NULL: re.compile(r"^(?:~|null|Null|NULL|)$"),
    _MERGE: re.compile(r"^(?:<<)$"),
}
# The value of a scalar of each tag (its text matches the tag's pattern). An integer is decimal
# (a leading zero is not octal) or 0x hex.
_CONSTRUCT: dict[str, Any] = {
    _STR: str,
    _INT: lambda text: int(text[2:], 16) if text.startswith("0x") else int(text, 10),
    _FLOAT: lambda text: float(text.lower().replace(".inf", "inf").replace(".nan", "nan")),
    _BOOL: lambda text: text.lower() == "true",
    _NULL: lambda text: None,
}
# libyaml's parser is ~10x faster; its events and positions are the same
FAST_LOADER: type | None = yaml.CSafeLoader if yaml.__with_libyaml__ else None


def _pos(mark: Any) -> Pos:
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


def _resolve(event: Any) -> str:
    """A scalar's tag: its own, else by `_IMPLICIT` for a plain scalar, else str."""
    if event.tag not in (None, "!"):
        return str(event.tag)
    if event.implicit[0]:
        for tag, pattern in _IMPLICIT.items():
            if pattern.match(event.value):
                return tag
    return _STR


class _YamlReader:
    """The parser's events, read once into values, positions and findings."""

    def __init__(self, text: str, name: str) -> None:
        self.text = text
        self.doc = SourceDoc(name)
        self.anchors: dict[str | None, tuple[Any, int]] = {}  # each one's value and size
        self.open: list[str | None] = []  # the anchors of the collections being read
        self.alias_nodes = 0

    def run(self, loader: type) -> SourceDoc:
        """Read with `loader`'s parser (its constructor refuses characters YAML does not allow)."""
        try:
            self.events = loader(self.text)
            documents = 0
            while self.events.check_event():
                event = self.events.get_event()
                if isinstance(event, yaml.DocumentStartEvent):
                    documents += 1
                    if documents > 1:
                        message = "more than one YAML document in the file"
                        hint = "a rules file holds exactly one document; remove the second `---`"
                        raise Stop(_pos(event.start_mark), message, hint, "multiple-documents")
                elif isinstance(event, yaml.NodeEvent):
                    self.doc.data = self.node(event, (), 0)[0]
        except Stop as stop:
            self.doc.error(*stop.args)
        except (yaml.YAMLError, ValueError, OverflowError) as exc:
            self.doc.error(*self.syntax_error(exc), "yaml-syntax")
        if hasattr(self, "events"):
            self.events.dispose()
        return self.doc

    def syntax_error(self, exc: Exception) -> tuple[Pos, str, str]:
        if isinstance(exc, yaml.MarkedYAMLError):
            context = f" ({exc.context})" if exc.context else ""
            message = f"YAML syntax error: {exc.problem or 'invalid YAML'}{context}"
            hint = "check indentation, quoting and brackets near this position"
            return _pos(exc.problem_mark or exc.context_mark), message, hint
        if isinstance(exc, yaml.YAMLError):  # ReaderError
            code = getattr(exc, "character", None)
            shown = f"U+{code:04X}" if isinstance(code, int) else "(unknown)"
            message = f"character {shown} is not allowed in a YAML text"
            hint = "remove control characters; a rules file is UTF-8 text"
            return text_position(self.text, getattr(exc, "position", 0)), message, hint
        # PyYAML's scanner raises ValueError or OverflowError for these
        message = "YAML syntax error: an escape names a character beyond U+10FFFF"
        hint = "a \\U escape takes 8 hex digits up to 0010FFFF"
        return _pos(getattr(self.events, "get_mark", lambda: None)()), message, hint

    def node(self, event: Any, path: Path, depth: int) -> tuple[Any, int]:
        """The value `event` starts, read to its end, and how many values it holds."""
        pos = _pos(event.start_mark)
        if isinstance(event, yaml.AliasEvent):
            return self.alias(event.anchor, path, pos)
        self.doc.positions[path] = pos
        if isinstance(event, yaml.ScalarEvent):
            value, size = self.scalar(event, pos), 1
        else:
            check_depth(depth, pos, "a rules file is never this deep; flatten the document")
            if event.tag not in (None, "!", _SEQ, _MAP):
                hint = "rules files use plain lists and mappings"
                self.doc.error(pos, f"unsupported YAML tag {event.tag!r}", hint, "yaml-tag")
            self.open.append(event.anchor)
            if isinstance(event, yaml.SequenceStartEvent):
                value, size = [], 1
                while not isinstance(item := self.events.get_event(), yaml.SequenceEndEvent):
                    child, child_size = self.node(item, path + (len(value),), depth + 1)
                    value.append(child)
                    size += child_size
            else:
                value, size = self.mapping(path, depth)
            self.open.pop()
        if event.anchor:
            self.anchors[event.anchor] = (value, size)
        return value, size

    def alias(self, name: str | None, path: Path, pos: Pos) -> tuple[Any, int]:
        if name in self.open:
            message = f"recursive alias *{name} (it refers to a value that contains it)"
            raise Stop(pos, message, "rules cannot be recursive", "yaml-alias")
        if name not in self.anchors:
            hint = f"define &{name} before using it"
            raise Stop(pos, f"undefined alias *{name}", hint, "yaml-alias")
        value, size = self.anchors[name]
        self.alias_nodes += size
        if self.alias_nodes > MAX_ALIAS_NODES:
            message = f"aliases expand to more than {MAX_ALIAS_NODES} values"
            hint = "this looks like an alias bomb ('billion laughs'); write the values out"
            raise Stop(pos, message, hint, "alias-bomb")
        self.doc.positions[path] = pos
        return copy_tree(value), size

    def scalar(self, event: Any, pos: Pos) -> Any:
        tag, text = _resolve(event), event.value
        if tag not in _CONSTRUCT:
            hint = "rules files use plain strings, numbers, booleans, lists and mappings"
            self.doc.error(pos, f"unsupported YAML tag {tag!r}", hint, "yaml-tag")
            tag = _STR
        if tag in (_INT, _FLOAT) and (too_long := long_number(text, pos)):
            self.doc.error(*too_long.args)
            tag = _STR  # kept as text so reading goes on; the error above rejects the file
        if tag != _STR and not _IMPLICIT[tag].match(text):  # e.g. `!!bool maybe`
            message = f"{text!r} is not a value of its tag !!{tag.rpartition(':')[2]}"
            self.doc.error(pos, message, "write a value of that type, or drop the tag", "yaml-tag")
            tag = _STR
        return _CONSTRUCT[tag](text)

    def mapping(self, path: Path, depth: int) -> tuple[dict[str, Any], int]:
        """A mapping's items, merge keys (`<<`) applied, and how many values it holds."""
        value: dict[str, Any] = {}
        merged: dict[str, Any] = {}
        size = 1
        while not isinstance(event := self.events.get_event(), yaml.MappingEndEvent):
            pos = _pos(event.start_mark)
            key = self.key(event, value, path, pos)
            item, item_size = self.node(self.events.get_event(), path + (key,), depth + 1)
            size += item_size
            sources = item if isinstance(item, list) else [item]
            if key != "<<":
                value[key] = item
            elif all(isinstance(source, dict) for source in sources):
                for source in sources:
                    for k, v in source.items():
                        merged.setdefault(k, v)
            else:
                message = "a merge key (<<) takes a mapping or a list of mappings"
                hint = "use `<<: *anchor` with an anchored mapping"
                self.doc.error(pos, message, hint, "yaml-merge", path=path)
        return merged | value, size

    def key(self, event: Any, mapping: dict[str, Any], path: Path, pos: Pos) -> str:
        """A key's text (`<<` for a merge key), checked; its position is kept."""
        if isinstance(event, yaml.AliasEvent):
            message = "an alias cannot be used as a mapping key"
            raise Stop(pos, message, "write the key out", "yaml-alias")
        if not isinstance(event, yaml.ScalarEvent):
            message = "a mapping key must be a plain string, not a list or mapping"
            raise Stop(pos, message, "write the key as text", "key-type")
        text: str = event.value
        tag = _resolve(event)
        if tag == _MERGE:
            return "<<"
        if tag != _STR:
            message = f"key {text if text else '(empty)'!r} is not a string"
            self.doc.error(pos, message, f"quote it: '{text}'", "key-type", path=path)
        hint = "YAML keeps only the last value; remove one of them"
        self.doc.note_key(path + (text,), pos, text in mapping, hint)
        return text


def load_yaml(text: str, name: str) -> SourceDoc:
    """Parse one YAML document; problems go to `findings` (never raised).

    libyaml reads when available; on a syntax error the pure-Python parser reads
    again, so error messages are the same on every installation.
    """
    if FAST_LOADER is not None:
        doc = _YamlReader(text, name).run(FAST_LOADER)
        if all(finding.code != "yaml-syntax" for finding in doc.findings):
            return doc
    return _YamlReader(text, name).run(yaml.SafeLoader)


SURROGATE = re.compile("[\ud800-\udfff]")


def text_position(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of a character index."""
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


def check_values(doc: SourceDoc) -> None:
    """Add an error for every out-of-range integer and lone surrogate of `doc.data`."""
    stack: list[tuple[Path, Any]] = [((), doc.data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and SURROGATE.search(key):
                    where = doc.key_positions.get(path + (key,), doc.positions.get(path, (1, 1)))
                    message = "lone surrogate (half of a character) in a key"
                    doc.error(where, message, "fix the key", "encoding")
                    continue
                stack.append((path + (key,), item))
        elif isinstance(value, list):
            stack.extend((path + (i,), item) for i, item in enumerate(value))
        # No breadcrumb for a value: it could quote another bad value (an item's id).
        elif is_int(value) and not -MAX_INT - 1 <= value <= MAX_INT:
            message = "integer out of range (rules integers lie within -2**63 .. 2**63-1)"
            doc.error(doc.positions.get(path, (1, 1)), message, "", "too-large")
        elif isinstance(value, str) and (found := SURROGATE.search(value)):
            message = f"lone surrogate U+{ord(found.group()):04X} (half of a character)"
            doc.error(doc.positions.get(path, (1, 1)), message, "", "encoding")


def copy_tree(value: Any) -> Any:
    """A copy of nested dicts and lists (leaves are shared; they are immutable)."""
    if isinstance(value, dict):
        return {k: copy_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_tree(v) for v in value]
    return value


def _safe_repr(value: Any) -> str:
    """A short repr that never raises (a key may be any object, even a huge integer)."""
    if is_int(value) and abs(value) > 10**30:
        return "(a very large integer)"
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not break loading
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def mapping_doc(mapping: Mapping[str, Any], name: str) -> SourceDoc:
    """A source doc for an in-memory mapping, copied with mappings as dicts and tuples as lists;
    every path is at 0:0 (no position).

    A value of more than `MAX_VALUES` values (shared sub-trees counted per place), nested
    deeper than `MAX_DEPTH` or containing itself is an error, and the doc has no data.
    """
    doc, copied = SourceDoc(name), 0
    bad_keys: list[tuple[Path, Any]] = []  # (path, key) of each key that is not a string

    def copy(value: Any, path: Path | None, ancestors: tuple[int, ...]) -> Any:
        """The copy of `value` at `path` (None below a key that is not a string: unplaced)."""
        nonlocal copied
        copied += 1
        if copied > MAX_VALUES:
            message = f"the mapping holds more than {MAX_VALUES:,} values"
            hint = "a rules document is a few hundred values; shared sub-mappings count "
            hint += "once per place they appear"
            raise Stop((0, 0), message, hint, "too-large")
        if path is not None:
            doc.positions[path] = (0, 0)
        if not isinstance(value, (Mapping, list, tuple)):
            return value
        if id(value) in ancestors:
            message = "the mapping contains itself (a cycle)"
            raise Stop((0, 0), message, "rules are a tree of plain values", "cycle")
        check_depth(len(ancestors), (0, 0), "a rules document is never this deep")
        keyed = isinstance(value, Mapping)
        items = list(value.items() if isinstance(value, Mapping) else enumerate(value))
        for key in value if keyed else ():
            if path is not None and isinstance(key, str):
                doc.key_positions[path + (key,)] = (0, 0)
            elif path is not None:
                bad_keys.append((path, key))
        result = dict.fromkeys(key for key, _ in items)
        for key, item in reversed(items):  # last first: the order the checks always ran in
            below = None if path is None or (keyed and not isinstance(key, str)) else path + (key,)
            result[key] = copy(item, below, ancestors + (id(value),))
        return result if keyed else list(result.values())

    try:
        doc.data = copy(mapping, (), ())
    except Stop as stop:
        doc.error(*stop.args)
        return doc
    for path, key in bad_keys:
        message = f"key {_safe_repr(key)} is not a string"
        doc.error((0, 0), message, "use string keys", "key-type", path=path)
    check_values(doc)
    return doc


@dataclass(frozen=True)
class RulesDocument:
    """A merged, validated rules document (`data` uses native keys)."""

    data: dict[str, Any]
    findings: list[Finding]  # the warnings loading found (errors raise instead)
    source: str
    layers: tuple[SourceDoc, ...] = field(default=(), compare=False, repr=False)


WARNING = "warning_threshold"
CRITICAL = "critical_threshold"
BREAKER = "global_circuit_breaker_threshold"
ORDER = ((WARNING, CRITICAL), (CRITICAL, BREAKER))  # each pair's second is above its first


@dataclass(frozen=True)
class Repair:
    """One threshold raised by the repair: which field, from what, to what."""

    field: str  # dotted, e.g. "loop_detection.critical_threshold"
    old: int
    new: int


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`override` over `base`: mappings merge key by key; lists and scalars replace."""
    result = {k: copy_tree(v) for k, v in base.items()}
    for key, value in override.items():
        current = result.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            result[key] = deep_merge(current, value)
        else:
            result[key] = copy_tree(value)
    return result


def effective_config(
    data: Mapping[str, Any], agent: str | None = None
) -> tuple[dict[str, Any], list[Repair]]:
    """The config one agent runs with (no `agents` key) and the repairs it needed; an unknown
    agent (or None) gets the global blocks only."""
    agents = data.get("agents")
    block = agents.get(agent) if agent is not None and isinstance(agents, Mapping) else None
    globals_only = {k: v for k, v in data.items() if k != "agents"}
    config = deep_merge(globals_only, block if isinstance(block, Mapping) else {})
    loop = config.get("loop_detection")
    loop = loop if isinstance(loop, dict) else {}
    repairs: list[Repair] = []
    for low, high in ORDER:  # raise critical, then the breaker, until the order holds
        below, value = loop.get(low), loop.get(high)
        if is_int(below) and is_int(value) and value <= below:
            repairs.append(Repair(f"loop_detection.{high}", value, below + 1))
            loop[high] = below + 1
    return config, repairs
