"""YAML rules text -> plain values with the line:col of every value kept.

PyYAML's `safe_load` silently keeps the last of two duplicate keys, expands
aliases without limit ("billion laughs") and recurses once per nesting level.
So this module walks the parser's *event stream* itself, in one iterative
pass with an explicit stack:

- duplicate keys are reported (the last value is kept, as PyYAML would);
- aliases are copied only while the total number of nodes they add stays
  under `MAX_ALIAS_NODES`; a recursive alias is refused;
- nesting deeper than `MAX_DEPTH` is refused (no RecursionError anywhere);
- scalars resolve as in YAML 1.2's core schema: only `true`/`false` are
  booleans (so `yes`, `no`, `on`, `off` stay strings), no timestamps, no
  sexagesimal or leading-zero octal numbers;
- only the standard tags (str, int, float, bool, null, seq, map) are allowed.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

import yaml
from yaml.nodes import ScalarNode

from loopguard.config.source import Path, Pos, SourceDoc, copy_tree
from loopguard.findings import codes

MAX_DEPTH = 100
MAX_ALIAS_NODES = 100_000
MAX_NUMBER_CHARS = 64  # a longer literal is no threshold (and int() refuses > 4,300 digits)
_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
_ALLOWED_SCALAR_TAGS = {
    _STR,
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
}
_COLLECTION_TAGS = {None, "!", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"}


# The codes raised here: `code level stage` and what it means, as `lint --list-checks`
# and docs/rules.md document them
CODES = codes(
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
"""
)


class RulesYamlLoader(yaml.SafeLoader):
    """SafeLoader whose implicit scalar types follow YAML 1.2 (core schema)."""

    yaml_implicit_resolvers: dict[Any, list[tuple[str, re.Pattern[str]]]] = {}


RulesYamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
RulesYamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0x[0-9a-fA-F]+)$"), list("-+0123456789")
)
RulesYamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)
RulesYamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]
)
RulesYamlLoader.add_implicit_resolver(_MERGE, re.compile(r"^(?:<<)$"), ["<"])


def _construct_int(loader: yaml.SafeLoader, node: ScalarNode) -> int:
    """YAML 1.2 integers: decimal (a leading zero is not octal) or 0x hex."""
    text = str(node.value)
    return int(text[2:], 16) if text.startswith("0x") else int(text, 10)


RulesYamlLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


try:  # libyaml's parser is ~50x faster; positions and events are the same
    from yaml.constructor import SafeConstructor
    from yaml.cyaml import CParser  # type: ignore[attr-defined]
    from yaml.resolver import Resolver

    class _FastLoader(CParser, SafeConstructor, Resolver):  # type: ignore[misc]
        """libyaml events with the same YAML 1.2 resolvers and constructors."""

        yaml_implicit_resolvers = RulesYamlLoader.yaml_implicit_resolvers
        yaml_constructors = RulesYamlLoader.yaml_constructors

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

    FAST_LOADER: type | None = _FastLoader
except ImportError:  # PyYAML built without libyaml
    FAST_LOADER = None


class _Abort(Exception):
    """Stop walking: the document cannot be read further."""


_NO_KEY = object()


class _Frame:
    """A mapping or sequence being built."""

    __slots__ = ("value", "path", "anchor", "key", "key_pos", "merges", "size", "pos")

    def __init__(self, value: Any, path: Path, anchor: str | None, pos: Pos) -> None:
        self.value = value
        self.path = path
        self.anchor = anchor
        self.key: Any = _NO_KEY
        self.key_pos: Pos = pos
        self.merges: list[dict[str, Any]] = []
        self.size = 1
        self.pos = pos


def _char_name(exc: Exception) -> str:
    code = getattr(exc, "character", None)
    return f"U+{code:04X}" if isinstance(code, int) else "(unknown)"


def _pos(mark: Any) -> Pos:
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


class _Builder:
    """Turns parser events into values, positions and findings."""

    def __init__(self, text: str, name: str, loader_class: type) -> None:
        self.text = text
        self.loader_class = loader_class
        self.loader: Any = None
        self.syntax_failed = False
        self.doc = SourceDoc(name)
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.alias_nodes = 0
        self.documents = 0
        self.root: Any = None

    def fail(self, pos: Pos, message: str, hint: str = "", code: str = "yaml-syntax") -> NoReturn:
        self.doc.error(pos, message, hint, code)
        raise _Abort

    def _bad_character(self, exc: yaml.YAMLError) -> None:
        """Record a character YAML does not allow (PyYAML's ReaderError) as a syntax error."""
        self.syntax_failed = True
        self.doc.error(
            self._char_pos(getattr(exc, "position", 0)),
            f"character {_char_name(exc)} is not allowed in a YAML text",
            "remove control characters; a rules file is UTF-8 text",
            "yaml-syntax",
        )

    def run(self) -> SourceDoc:
        try:
            self.loader = self.loader_class(self.text)
        except yaml.YAMLError as exc:  # ReaderError: a character YAML does not allow
            self._bad_character(exc)
            return self.doc
        try:
            while self.loader.check_event():
                self.handle(self.loader.get_event())
        except _Abort:
            pass  # `fail` already recorded the finding; what was read so far is kept
        except yaml.MarkedYAMLError as exc:
            self.syntax_failed = True
            where = exc.problem_mark or exc.context_mark
            problem = exc.problem or "invalid YAML"
            context = f" ({exc.context})" if exc.context else ""
            self.doc.error(
                _pos(where),
                f"YAML syntax error: {problem}{context}",
                "check indentation, quoting and brackets near this position",
                "yaml-syntax",
            )
        except yaml.YAMLError as exc:  # ReaderError: a character YAML does not allow
            self._bad_character(exc)
        except (ValueError, OverflowError):  # PyYAML's scanner: an escape past U+10FFFF
            self.syntax_failed = True
            self.doc.error(
                _pos(getattr(self.loader, "get_mark", lambda: None)()),
                "YAML syntax error: an escape names a character beyond U+10FFFF",
                "a \\U escape takes 8 hex digits up to 0010FFFF",
                "yaml-syntax",
            )
        finally:
            self.loader.dispose()
        self.doc.data = self.root
        return self.doc

    def _char_pos(self, index: int) -> Pos:
        before = self.text[:index]
        return before.count("\n") + 1, index - (before.rfind("\n") + 1) + 1

    # -- events ------------------------------------------------------------
    def handle(self, event: Any) -> None:
        pos = _pos(event.start_mark)
        if isinstance(event, yaml.DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                self.fail(
                    pos,
                    "more than one YAML document in the file",
                    "a rules file holds exactly one document; remove the second `---`",
                    "multiple-documents",
                )
        elif isinstance(event, yaml.ScalarEvent):
            self.scalar(event, pos)
        elif isinstance(event, yaml.AliasEvent):
            self.alias(event, pos)
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            self.start(event, pos)
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            self.end()

    def child_path(self) -> Path | None:
        """The path of the value an event starts; None when the event is a mapping key."""
        if not self.stack:
            return ()
        top = self.stack[-1]
        if isinstance(top.value, list):
            return top.path + (len(top.value),)
        if top.key is _NO_KEY:
            return None
        return top.path + (top.key,)

    def scalar(self, event: Any, pos: Pos) -> None:
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.loader.resolve(ScalarNode, event.value, event.implicit)
        path = self.child_path()
        if path is None:
            self.key(event.value, tag, pos)
            return
        if tag not in _ALLOWED_SCALAR_TAGS:
            self.doc.error(
                pos,
                f"unsupported YAML tag {tag!r}",
                "rules files use plain strings, numbers, booleans, lists and mappings",
                "yaml-tag",
            )
            tag = _STR
        if tag in _NUMBER_TAGS and len(event.value) > MAX_NUMBER_CHARS:
            self.doc.error(
                pos,
                f"number too long ({len(event.value)} characters; at most {MAX_NUMBER_CHARS})",
                "rules numbers are thresholds and sizes",
                "too-large",
            )
            tag = _STR  # kept as text so reading goes on; the error above rejects the file
        node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        value = RulesYamlLoader.yaml_constructors[tag](self.loader, node)
        if event.anchor:
            self.anchors[event.anchor] = (value, 1)
        self.doc.positions[path] = pos
        self.add(value, 1, path)

    def key(self, text: str, tag: str, pos: Pos) -> None:
        top = self.stack[-1]
        if tag == _MERGE:
            top.key, top.key_pos = "<<", pos
            return
        if tag != _STR:
            shown = text if text else "(empty)"
            self.doc.error(
                pos,
                f"key {shown!r} is not a string",
                f"quote it: '{text}'",
                "key-type",
                path=top.path,
            )
        if text in top.value:
            first = self.doc.key_positions.get(top.path + (text,), (0, 0))
            self.doc.error(
                pos,
                f"duplicate key {text!r} (first defined at line {first[0]})",
                "YAML keeps only the last value; remove one of them",
                "duplicate-key",
                path=top.path + (text,),
            )
        top.key, top.key_pos = text, pos
        self.doc.key_positions[top.path + (text,)] = pos

    def alias(self, event: Any, pos: Pos) -> None:
        path = self.child_path()
        if path is None:
            self.fail(
                pos, "an alias cannot be used as a mapping key", "write the key out", "yaml-alias"
            )
        name = event.anchor
        if any(frame.anchor == name for frame in self.stack):
            self.fail(
                pos,
                f"recursive alias *{name} (it refers to a value that contains it)",
                "rules cannot be recursive",
                "yaml-alias",
            )
        if name not in self.anchors:
            self.fail(
                pos, f"undefined alias *{name}", f"define &{name} before using it", "yaml-alias"
            )
        value, size = self.anchors[name]
        self.alias_nodes += size
        if self.alias_nodes > MAX_ALIAS_NODES:
            self.fail(
                pos,
                f"aliases expand to more than {MAX_ALIAS_NODES} values",
                "this looks like an alias bomb ('billion laughs'); write the values out",
                "alias-bomb",
            )
        self.doc.positions[path] = pos
        self.add(copy_tree(value), size, path)

    def start(self, event: Any, pos: Pos) -> None:
        path = self.child_path()
        if path is None:
            self.fail(
                pos,
                "a mapping key must be a plain string, not a list or mapping",
                "write the key as text",
                "key-type",
            )
        if len(self.stack) >= MAX_DEPTH:
            self.fail(
                pos,
                f"nesting deeper than {MAX_DEPTH} levels",
                "a rules file is never this deep; flatten the document",
                "too-deep",
            )
        if event.tag not in _COLLECTION_TAGS:
            self.doc.error(
                pos,
                f"unsupported YAML tag {event.tag!r}",
                "rules files use plain lists and mappings",
                "yaml-tag",
            )
        value: Any = [] if isinstance(event, yaml.SequenceStartEvent) else {}
        self.doc.positions[path] = pos
        self.stack.append(_Frame(value, path, event.anchor, pos))

    def end(self) -> None:
        frame = self.stack.pop()
        value = frame.value
        if isinstance(value, dict) and frame.merges:
            merged: dict[str, Any] = {}
            for source in frame.merges:
                for k, v in source.items():
                    merged.setdefault(k, v)
            merged.update(value)
            value = merged
        if frame.anchor:
            self.anchors[frame.anchor] = (value, frame.size)
        self.add(value, frame.size, frame.path)

    def add(self, value: Any, size: int, path: Path) -> None:
        """Attach a finished value to its parent (or make it the root)."""
        if not self.stack:
            self.root = value
            return
        top = self.stack[-1]
        top.size += size
        if isinstance(top.value, list):
            top.value.append(value)
            return
        if top.key == "<<":
            self.merge(top, value)
        else:
            top.value[top.key] = value
        top.key = _NO_KEY

    def merge(self, top: _Frame, value: Any) -> None:
        sources = value if isinstance(value, list) else [value]
        if not all(isinstance(s, dict) for s in sources):
            self.doc.error(
                top.key_pos,
                "a merge key (<<) takes a mapping or a list of mappings",
                "use `<<: *anchor` with an anchored mapping",
                "yaml-merge",
                path=top.path,
            )
            return
        top.merges.extend(sources)


def load_yaml(text: str, name: str) -> SourceDoc:
    """Parse one YAML document; problems go to `findings` (never raised).

    libyaml reads when available; on a syntax error the pure-Python parser reads
    again, so error messages are the same on every installation.
    """
    if FAST_LOADER is not None:
        builder = _Builder(text, name, FAST_LOADER)
        doc = builder.run()
        if not builder.syntax_failed:
            return doc
    return _Builder(text, name, RulesYamlLoader).run()
