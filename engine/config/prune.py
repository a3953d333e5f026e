"""A rules document without the values its schema rejects, so later checks can still run.

Lint reports everything in one pass: a schema error in one place must not hide an undefined keyword
set or a broken threshold elsewhere. `prune_invalid` removes each rejected value (an unknown key, a
value of the wrong type) and validates again until nothing more is rejected (an object missing a
required key stays, so its other keys are still checked); positions move with the values, so later
findings still point at the right line. When the root itself would go, there is nothing left to
check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from loopguard.config.positions import Path, SourceDoc
from loopguard.config.validate import pattern_budget, validator_for

MAX_ROUNDS = 16


@dataclass
class PrunedDoc(SourceDoc):
    """A source doc without its rejected values; what was written and what was left out."""

    original: Any = None  # the data as written
    removed: set[Path] = field(default_factory=set)  # paths of the data as written
    # path now -> path as written, so findings name list items by the index the user sees
    written_paths: dict[Path, Path] = field(default_factory=dict)


def _bad_paths(data: Any, schema: dict[str, Any]) -> set[Path]:
    """The paths of the values the schema rejects (unknown keys one by one).

    A missing required key rejects nothing that is there: the object stays (its other
    keys are still checked; the checks read objects with `.get`).
    """
    found: set[Path] = set()
    with pattern_budget():
        errors = list(validator_for(schema).iter_errors(data))
    for err in errors:
        path = tuple(err.absolute_path)
        inst, sub = err.instance, err.schema
        if err.validator == "required":
            continue
        if (
            err.validator == "additionalProperties"
            and isinstance(inst, dict)
            and isinstance(sub, dict)
        ):
            known = sub.get("properties") or {}
            patterns = list(sub.get("patternProperties") or {})
            found.update(
                path + (k,)
                for k in inst
                if k not in known and not any(re.search(p, str(k)) for p in patterns)
            )
        else:
            found.add(path)
    return found


def _without(data: Any, bad: set[Path]) -> tuple[Any, dict[Path, Path]]:
    """A copy of `data` without the `bad` paths, and old path -> new path of what is kept."""
    moved: dict[Path, Path] = {(): ()}

    def copy(node: Any, old: Path, new: Path) -> Any:
        if isinstance(node, dict):
            kept: dict[Any, Any] = {}
            for key, value in node.items():
                if old + (key,) not in bad:
                    moved[old + (key,)] = new + (key,)
                    kept[key] = copy(value, old + (key,), new + (key,))
            return kept
        if isinstance(node, list):
            items: list[Any] = []
            for i, value in enumerate(node):
                if old + (i,) not in bad:
                    moved[old + (i,)] = new + (len(items),)
                    items.append(copy(value, old + (i,), new + (len(items),)))
            return items
        return node

    return copy(data, (), ()), moved


def _remap(table: dict[Path, Any], moved: dict[Path, Path]) -> dict[Path, Any]:
    return {moved[p]: v for p, v in table.items() if p in moved}


def prune_invalid(doc: SourceDoc, schema: dict[str, Any]) -> SourceDoc | None:
    """`doc` without every value the schema rejects (findings kept); None if nothing is left."""
    data, positions, keys, display = doc.data, doc.positions, doc.key_positions, doc.display
    removed: set[Path] = set()
    back = {p: p for p in positions}  # path now -> path as written
    for _ in range(MAX_ROUNDS):
        bad = _bad_paths(data, schema)
        if not bad:
            return PrunedDoc(
                doc.name, data, positions, keys, doc.findings, display, doc.data, removed, back
            )
        if () in bad:
            return None
        removed.update(back.get(p, p) for p in bad)
        data, moved = _without(data, bad)
        back = {new: back.get(old, old) for old, new in moved.items()}
        positions, keys = _remap(positions, moved), _remap(keys, moved)
        display = _remap(display, moved)
    return None
