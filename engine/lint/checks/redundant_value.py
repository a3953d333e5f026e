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
from loopguard.findings import Finding
from loopguard.lint.checks.context import LintContext

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


def check(ctx: LintContext) -> list[Finding]:
    inherited: dict[str, Any] = {}  # what the file would get by writing nothing
    for layer in ctx.layers[:-1]:
        if isinstance(layer.data, dict):
            inherited = deep_merge(
                inherited, {k: v for k, v in layer.data.items() if k != "extends"}
            )
    found: list[Finding] = []
    for key, value in ctx.top.items():
        if key in _SKIP or key not in inherited:
            continue
        for path, same in _leaves(value, inherited[key], (key,)):
            shown = ".".join(str(p) for p in path)
            message = f"{shown} is set to {same!r}, the value it already inherits"
            hint = "remove it (the inherited value applies)"
            found.append(ctx.finding(path, LEVEL, message, hint, CODE))
    return found
