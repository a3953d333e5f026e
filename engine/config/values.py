"""Values a rules document may hold, whatever wrote it (YAML, JSON5 or a Python mapping).

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
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from loopguard.config.positions import Path, SourceDoc
from loopguard.text.hints import is_int

MAX_INT = 2**63 - 1
MAX_DEPTH = 100
MAX_VALUES = 200_000  # values copied from a Python mapping (each place a shared value appears)
_SURROGATE = re.compile("[\ud800-\udfff]")


# (code, level, stage, what it means): the codes raised here, as `lint --list-checks`
# and docs/rules.md document them
CODES = (
    (
        "too-deep",
        "error",
        "syntax",
        "Nesting deeper than a rules file ever needs.\n\nFails: `[[[[[[...]]]]]]` 200 levels deep.",
    ),
    (
        "cycle",
        "error",
        "syntax",
        "A mapping given to `Guard.from_dict` that contains "
        "itself.\n\nFails: `d = {'version': 1}; d['x'] = d`.",
    ),
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
