"""A rules document's source: positions, checked values, the merge rule, the loaded record.

Where each value of a rules document was written, and how to name it.

Every loader (YAML, JSON5) produces a `SourceDoc`: plain Python values plus a
map from a path inside the document (a tuple of keys and list indexes) to the
1-based line and column where that value, or its key, starts. A
`PositionIndex` stacks the source documents of an `extends:` chain so that a
finding about the merged document points at the file that wrote the value.

Values a rules document may hold, whatever wrote it (YAML, JSON5 or a Python mapping).

Parsers accept more than the rest of loopguard can use safely, so every parsed
document is checked here before validation:

- integers lie within the signed 64-bit range (`MAX_INT`): no threshold or size
  needs more, and Python refuses to print an integer over 4,300 digits, which
  broke error messages;
- text holds no lone surrogate (`"\\ud83d"`, half an emoji): it cannot be
  written out as UTF-8, so output, logs and keyword matching would fail later;
- a mapping given to `Guard.from_dict` is at most `MAX_DEPTH` levels deep, does
  not contain itself (no RecursionError) and holds at most `MAX_VALUES` values
  counted per place (a `yaml.safe_load`ed alias bomb shares sub-trees that would
  otherwise be copied a billion times).

Each problem is an error at the value's position (0:0 for a mapping).

The record the rules loader hands out: a merged document that passed validation.

Only the loader (`loopguard.config.layers`) builds a `RulesDocument`, after checking every
layer against the schema, so holding one means "validated": `Guard(document)` uses it as
is. It lives apart from the loader so that the Guard can name it without importing the
loading machinery (YAML, JSON Schema) at `import loopguard`.

Per-agent merging and threshold repair, on plain rules dicts.

`deep_merge` is the one merge rule of rules files: mappings merge key by key,
lists and scalars replace. It serves both `extends:` layering and per-agent
overrides. `effective_config` builds what one agent runs with: the global
blocks, the agent's block merged over them, then the thresholds repaired so
that warning < critical < global breaker holds:

- if critical <= warning, critical becomes warning + 1;
- then if breaker <= critical, breaker becomes critical + 1;
- warning is never lowered.

Nothing here mutates its input; the result shares no containers with it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopguard.findings import Finding, codes
from loopguard.text.hints import is_int

Path = tuple[Any, ...]
Pos = tuple[int, int]


@dataclass
class SourceDoc:
    """One parsed source: values, positions, and the problems met while parsing."""

    name: str
    data: Any = None
    positions: dict[Path, Pos] = field(default_factory=dict)
    key_positions: dict[Path, Pos] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    # Translated documents (OpenClaw blocks) name paths the way the user wrote them.
    display: dict[Path, str] = field(default_factory=dict)

    def error(
        self,
        pos: Pos,
        message: str,
        hint: str = "",
        code: str = "",
        path: Path = (),
        level: str = "error",
    ) -> None:
        """Record a finding at `pos`, naming `path` as a breadcrumb."""
        crumb = breadcrumb(self.data, path, self.display) if path else ""
        self.findings.append(Finding(self.name, pos[0], pos[1], level, message, crumb, hint, code))

    @property
    def has_errors(self) -> bool:
        return any(f.level == "error" for f in self.findings)


def _item_name(item: Any) -> str | None:
    """List items with an `id` (or `tool`) are named by it in breadcrumbs."""
    if isinstance(item, dict):
        for key in ("id", "tool"):
            value = item.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def breadcrumb(
    data: Any,
    path: Path,
    display: dict[Path, str] | None = None,
    written: Path | None = None,
) -> str:
    """`a.b[2].c`, with list items named by their `id`/`tool` when they have one.

    `written` (as long as `path`) is the same path as the user wrote it: a list index
    shown is the one in the file, even when an earlier item was left out (`schema.prune_invalid`).
    """
    shown_steps = written if written is not None and len(written) == len(path) else path
    if display:
        for cut in range(len(path), 0, -1):
            shown = display.get(path[:cut])
            if shown is not None:
                rest = breadcrumb(_descend(data, path[:cut]), path[cut:], None, shown_steps[cut:])
                if not rest:
                    return shown
                return shown + (rest if rest.startswith("[") else "." + rest)
    text = ""
    node = data
    for step, shown_step in zip(path, shown_steps, strict=True):
        if isinstance(step, int):
            name = (
                _item_name(node[step]) if isinstance(node, list) and 0 <= step < len(node) else None
            )
            text += f".{name}" if name and text else name if name else f"[{shown_step}]"
        else:
            text += f".{step}" if text else str(step)
        node = _child(node, step)
    return text


def _child(node: Any, step: Any) -> Any:
    if isinstance(node, dict):
        return node.get(step)
    if isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
        return node[step]
    return None


def _descend(node: Any, path: Path) -> Any:
    for step in path:
        node = _child(node, step)
    return node


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

    def locate(self, path: Path, at_key: bool = False) -> tuple[SourceDoc | None, Pos]:
        """The layer and position of `path`, or of its nearest written ancestor."""
        for cut in range(len(path), -1, -1):
            sub = path[:cut]
            layer = self.owner(sub) if sub else None
            if layer is not None:
                if at_key and cut == len(path) and sub in layer.key_positions:
                    return layer, layer.key_positions[sub]
                return layer, layer.positions[sub]
        last = self.layers[-1] if self.layers else None
        return last, (1, 1)

    def finding(
        self,
        data: Any,
        path: Path,
        level: str,
        message: str,
        hint: str = "",
        code: str = "",
        at_key: bool = False,
    ) -> Finding:
        """A finding about `path` of the merged `data`, placed where it was written."""
        layer, (line, col) = self.locate(path, at_key)
        name = layer.name if layer is not None else "<rules>"
        display = layer.display if layer is not None else None
        crumb = breadcrumb(data, path, display, _as_written(layer, path))
        return Finding(name, line, col, level, message, crumb, hint, code)


def _as_written(layer: SourceDoc | None, path: Path) -> Path | None:
    """`path` as the layer's file wrote it, when values before it were left out
    (`schema.prune_invalid`)."""
    back = getattr(layer, "written_paths", None)
    if not back:
        return None
    for cut in range(len(path), 0, -1):
        written = back.get(path[:cut])
        if written is not None and len(written) == cut:
            return written + path[cut:]
    return None


MAX_INT = 2**63 - 1
MAX_DEPTH = 100
MAX_VALUES = 200_000  # values copied from a Python mapping (each place a shared value appears)
_SURROGATE = re.compile("[\ud800-\udfff]")


# The codes raised here: `code level stage` and what it means, as `lint --list-checks`
# and docs/rules.md document them
CODES = codes(
    """
too-deep error syntax
    Nesting deeper than a rules file ever needs.

    Fails: `[[[[[[...]]]]]]` 200 levels deep.
cycle error syntax
    A mapping given to `Guard.from_dict` that contains itself.

    Fails: `d = {'version': 1}; d['x'] = d`.
"""
)


def surrogate_at(text: str) -> int | None:
    """Index of the first lone surrogate in `text`, or None."""
    found = _SURROGATE.search(text)
    return found.start() if found else None


def text_position(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of a character index."""
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


def check_text(text: str, doc: SourceDoc) -> bool:
    """False (with an error) when rules text holds a lone surrogate."""
    index = surrogate_at(text)
    if index is None:
        return True
    doc.error(
        text_position(text, index),
        f"lone surrogate U+{ord(text[index]):04X} (half of a character) in the text",
        "rules text must be valid Unicode; fix the character",
        "encoding",
    )
    return False


def _problem(value: Any) -> str | None:
    if is_int(value) and not -MAX_INT - 1 <= value <= MAX_INT:
        return "integer out of range (rules integers lie within -2**63 .. 2**63-1)"
    if isinstance(value, str) and surrogate_at(value) is not None:
        return f"lone surrogate U+{ord(value[surrogate_at(value) or 0]):04X} (half of a character)"
    return None


def check_values(doc: SourceDoc) -> None:
    """Add an error for every out-of-range integer and lone surrogate of `doc.data`."""
    stack: list[tuple[Path, Any]] = [((), doc.data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and surrogate_at(key) is not None:
                    doc.error(
                        doc.key_positions.get(path + (key,), doc.positions.get(path, (1, 1))),
                        "lone surrogate (half of a character) in a key",
                        "fix the key",
                        "encoding",
                    )
                    continue
                stack.append((path + (key,), item))
        elif isinstance(value, list):
            stack.extend((path + (i,), item) for i, item in enumerate(value))
        else:
            problem = _problem(value)
            if problem:
                where = doc.positions.get(path, (1, 1))
                # No breadcrumb: it could quote another bad value (an item's id).
                doc.error(where, problem, "", "too-large" if "integer" in problem else "encoding")


def copy_tree(value: Any) -> Any:
    """A copy of nested dicts and lists (leaves are shared; they are immutable)."""
    if isinstance(value, dict):
        return {k: copy_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_tree(v) for v in value]
    return value


def plain_copy(mapping: Any, doc: SourceDoc) -> Any:
    """A copy of a Python value with mappings as dicts and tuples as lists, built iteratively.

    A value nested deeper than `MAX_DEPTH` or containing itself is an error in `doc`
    (and the copy stops there).
    """
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, int, tuple[int, ...]]] = [(mapping, root, 0, 0, ())]
    copied = 0
    while stack:
        value, parent, slot, depth, ancestors = stack.pop()
        copied += 1
        if copied > MAX_VALUES:  # shared sub-trees (a safe_load'ed alias bomb) multiply
            doc.error(
                (0, 0),
                f"the mapping holds more than {MAX_VALUES:,} values",
                "a rules document is a few hundred values; shared sub-mappings count "
                "once per place they appear",
                "too-large",
            )
            return None
        if isinstance(value, (Mapping, list, tuple)):
            if id(value) in ancestors:
                doc.error(
                    (0, 0),
                    "the mapping contains itself (a cycle)",
                    "rules are a tree of plain values",
                    "cycle",
                )
                return None
            if depth >= MAX_DEPTH:
                doc.error(
                    (0, 0),
                    f"nesting deeper than {MAX_DEPTH} levels",
                    "a rules document is never this deep",
                    "too-deep",
                )
                return None
            inner = ancestors + (id(value),)
            if isinstance(value, Mapping):
                copy: Any = {}
                for key, item in value.items():
                    copy[key] = None
                    stack.append((item, copy, key, depth + 1, inner))
            else:
                copy = [None] * len(value)
                stack.extend((item, copy, i, depth + 1, inner) for i, item in enumerate(value))
            parent[slot] = copy
        else:
            parent[slot] = value
    return root[0]


@dataclass(frozen=True)
class RulesDocument:
    """A merged, validated rules document (`data` uses native keys)."""

    data: dict[str, Any]
    findings: list[Finding]  # the warnings loading found (errors raise instead)
    source: str
    layers: tuple[SourceDoc, ...] = field(default=(), compare=False, repr=False)

    @property
    def positions(self) -> PositionIndex:
        return PositionIndex(self.layers)


WARNING = "warning_threshold"
CRITICAL = "critical_threshold"
BREAKER = "global_circuit_breaker_threshold"


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


def repair_thresholds(loop: dict[str, Any], prefix: str = "loop_detection") -> list[Repair]:
    """Raise critical and breaker in place until the ordering holds; say what changed."""
    repairs: list[Repair] = []
    warning, critical, breaker = loop.get(WARNING), loop.get(CRITICAL), loop.get(BREAKER)
    if is_int(warning) and is_int(critical) and critical <= warning:
        repairs.append(Repair(f"{prefix}.{CRITICAL}", critical, warning + 1))
        critical = loop[CRITICAL] = warning + 1
    if is_int(critical) and is_int(breaker) and breaker <= critical:
        repairs.append(Repair(f"{prefix}.{BREAKER}", breaker, critical + 1))
        loop[BREAKER] = critical + 1
    return repairs


def effective_config(
    data: Mapping[str, Any], agent: str | None = None
) -> tuple[dict[str, Any], list[Repair]]:
    """The config one agent runs with (no `agents` key) and the repairs it needed.

    An unknown agent (or None) gets the global blocks only.
    """
    agents = data.get("agents")
    block = agents.get(agent) if agent is not None and isinstance(agents, Mapping) else None
    globals_only = {k: v for k, v in data.items() if k != "agents"}
    if isinstance(block, Mapping):
        config = deep_merge(globals_only, block)
    else:
        config = copy_tree(globals_only)
    loop = config.get("loop_detection")
    repairs = repair_thresholds(loop) if isinstance(loop, dict) else []
    return config, repairs
