"""The built-in checks: one module each, and the record (`LintCheck`) every check is listed as.

A check module declares `CODE`, `LEVEL`, `check(ctx: LintContext) -> list[Finding]` and
its documentation as its docstring ("Passes:" / "Fails:" examples), and may declare
`DEFAULT = False` (off unless enabled) and `EFFECTIVE = True` (it judges merged values,
so its findings where the schema rejected a value are dropped). `BUILTIN_CHECKS` names
the lint-only ones in listing order; this module is the plugin that registers them
(`loopguard_register_lint_checks`, the hook a third-party plugin implements).

A check with `BLOCKS_LOAD = True` (and the `STAGE` it is listed under) is run by the
rules loader instead (`config.layers.BLOCKING`): rules with its errors do not load, so
lint cannot disable it. This module imports no check: registering the plugin (on every
registry load) stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any

from loopguard.detection.hookspecs import hookimpl
from loopguard.findings import Finding

if TYPE_CHECKING:
    from loopguard.lint.checks.context import LintContext

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


@dataclass(frozen=True)
class LintCheck:
    """One code: its default level, whether it runs by default, its documentation."""

    code: str
    level: str
    doc: str
    check: Callable[[LintContext], Iterable[Finding]] | None = None  # None: loading reports it
    default: bool = True
    stage: str = "meaning"  # read, syntax, root, schema, extends, references, meaning
    origin: str = "loopguard"  # the plugin (package[entry]) that registered it
    effective: bool = False  # judges merged values (see the module docstring)

    @property
    def summary(self) -> str:
        return self.doc.strip().splitlines()[0].strip() if self.doc.strip() else ""

    @property
    def can_disable(self) -> bool:
        """Errors of the loading stages make a file unusable: lint cannot hide them."""
        return self.check is not None or self.level != "error"


def from_module(module: Any, origin: str = "loopguard") -> LintCheck:
    """The `LintCheck` a check module declares (see the module docstring)."""
    if getattr(module, "BLOCKS_LOAD", False):
        return LintCheck(module.CODE, module.LEVEL, module.__doc__ or "", None, True, module.STAGE)
    return LintCheck(
        module.CODE,
        module.LEVEL,
        module.__doc__ or "",
        module.check,
        getattr(module, "DEFAULT", True),
        "meaning",
        origin,
        getattr(module, "EFFECTIVE", False),
    )


@hookimpl
def loopguard_register_lint_checks() -> list[LintCheck]:
    """One `LintCheck` per module named in `BUILTIN_CHECKS`, in that order."""
    return [from_module(import_module(f"{__name__}.{name}")) for name in BUILTIN_CHECKS]


__all__ = ["BUILTIN_CHECKS", "LintCheck", "from_module"]
