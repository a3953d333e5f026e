"""The built-in lint checks, registered through the same hook a plugin implements."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from loopguard.detection.hookspecs import hookimpl


@hookimpl
def loopguard_register_lint_checks() -> list[Any]:
    """One `LintCheck` per module named in `BUILTIN_CHECKS`, in that order."""
    from loopguard.lint.checks import BUILTIN_CHECKS
    from loopguard.lint.checks import from_module

    return [from_module(import_module(f"{__package__}.{name}")) for name in BUILTIN_CHECKS]
