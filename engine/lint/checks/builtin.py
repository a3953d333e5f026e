"""The built-in lint checks, registered through the same hook a plugin implements.

`BUILTIN_CHECKS` names their modules in `loopguard.lint.checks`, in listing order (no
directory scanning).
"""

from __future__ import annotations

from importlib import import_module

from loopguard.detection.hookspecs import hookimpl
from loopguard.lint.checks.record import LintCheck, from_module

BUILTIN_CHECKS = (
    "unused_set",
    "empty_set",
    "empty_keyword",
    "duplicate_keyword",
    "duplicate_exempt_tool",
    "duplicate_detector",
    "duplicate_id",
    "threshold_order",
    "threshold_repaired",
    "never_fires",
    "gated_off",
    "unknown_agent",
    "unused_agent",
    "redundant_value",
    "redos",
)


@hookimpl
def loopguard_register_lint_checks() -> list[LintCheck]:
    """One `LintCheck` per module named in `BUILTIN_CHECKS`, in that order."""
    return [from_module(import_module(f"{__package__}.{name}")) for name in BUILTIN_CHECKS]
