"""A value the linted file sets to exactly what it inherits anyway (off by default).

Restating a default hides which settings a file really changes, and keeps the
old value when the default later moves. Compared with the merge of every layer
below the file (`builtin:default` and its `extends:`). Turn it on with
`--enable redundant-value`.

Passes: `loop_detection: {warning_threshold: 12}` (the default is 10).
Fails: `loop_detection: {warning_threshold: 10}` -> "loop_detection.warning_threshold is set to 10,
the value it already inherits".
"""

from __future__ import annotations

from typing import Any

from loopguard.config.source import Path, deep_merge
from loopguard.lint.checks.context import Findings, LintContext

CODE = "redundant-value"
LEVEL = "warning"
DEFAULT = False
_SKIP = ("version", "extends", "agents")


def _leaves(tree: Any, inherited: Any, path: Path) -> list[tuple[Path, Any]]:
    """Paths under `tree` whose value equals the inherited one (mappings walked key by key)."""
    if isinstance(tree, dict) and isinstance(inherited, dict):
        return [
            hit
            for key, value in tree.items()
            if key in inherited
            for hit in _leaves(value, inherited[key], path + (key,))
        ]
    return [(path, tree)] if tree == inherited and type(tree) is type(inherited) else []


def check(ctx: LintContext) -> Findings:
    inherited: dict[str, Any] = {}  # what the file would get by writing nothing
    for layer in ctx.layers[:-1]:  # each a mapping: loading refuses any other
        inherited = deep_merge(inherited, {k: v for k, v in layer.data.items() if k != "extends"})
    written = {k: v for k, v in ctx.top.items() if k not in _SKIP}
    for path, same in _leaves(written, inherited, ()):
        shown = ".".join(str(p) for p in path)
        message = f"{shown} is set to {same!r}, the value it already inherits"
        yield ctx.finding(path, LEVEL, message, "remove it (the inherited value applies)", CODE)
