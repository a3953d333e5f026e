"""A pytest plugin: with `-m "not slow"`, a module marked slow as a whole is not even imported.

Deselection by marker happens after collection, so a module's imports are paid even when
none of its tests run; for the agent-framework modules that is seconds. A module declares
itself slow with a top-level `pytestmark = pytest.mark.slow` (or a list holding it), read
here from its syntax tree (no import; only files whose text mentions it are parsed). Only
the exact inner-loop expression `not slow` skips modules this way; any other `-m`
expression collects everything and lets pytest deselect. Skipped modules are not counted
as "deselected" in pytest's summary.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

INNER_LOOP = "not slow"
_MENTIONS = re.compile(rb"^pytestmark\b.*?\bslow\b", re.MULTILINE | re.DOTALL)


def declares_slow(path: Path) -> bool:
    """Whether the module's top level marks every test in it slow."""
    try:
        text = path.read_bytes()
        if not _MENTIONS.search(text):
            return False
        tree = ast.parse(text, str(path))
    except (OSError, SyntaxError, ValueError):
        return False  # pytest collects it and reports what is wrong
    return any(
        isinstance(node, ast.Assign)
        and _names(node.targets) == ["pytestmark"]
        and _is_slow_mark(node.value)
        for node in tree.body
    )


def _names(targets: list[ast.expr]) -> list[str]:
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _is_slow_mark(value: ast.expr) -> bool:
    """`pytest.mark.slow`, or a list or tuple holding it."""
    if isinstance(value, (ast.List, ast.Tuple)):
        return any(_is_slow_mark(item) for item in value.elts)
    return ast.unparse(value) == "pytest.mark.slow"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave a whole-slow test module out when the mark expression is exactly `not slow`."""
    expression = " ".join((config.getoption("markexpr") or "").split())
    if (
        expression == INNER_LOOP
        and collection_path.suffix == ".py"
        and collection_path.name.startswith("test_")
        and declares_slow(collection_path)
    ):
        return True
    return None
