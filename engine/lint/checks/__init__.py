"""The lint checks, one module each, and the record (`LintCheck`) every check is listed as.

Every module of this package that declares `CODE` is a check (`discover()`), and nothing else
lists them. It declares `CODE`, `LEVEL`, `check(ctx: LintContext) -> Findings` and its
documentation as its docstring (a summary line, then "Passes:" / "Fails:" examples), and may
declare `DEFAULT = False` (off unless enabled) and `EFFECTIVE = True` (it judges merged values:
its findings where the schema rejected a value are dropped).

A check with `BLOCKS_LOAD = True` (and the `STAGE` it is listed under) is run by the rules
loader instead (`config.layers.BLOCKING`), scope by scope unless it declares `WHOLE_RULES =
True`: rules with its errors do not load, so lint cannot disable it. The others are registered
by this package as a plugin (`loopguard_register_lint_checks`, the hook a third-party plugin
implements).
"""

from __future__ import annotations

import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING

from loopguard.detection.hookspecs import hookimpl
from loopguard.findings import Finding

if TYPE_CHECKING:
    from loopguard.lint.checks.context import LintContext

# The stages in the order a rules file goes through them, the order `lint --list-checks` uses.
STAGES = ("read", "syntax", "root", "schema", "extends", "references", "directives", "meaning")


@dataclass(frozen=True)
class LintCheck:
    """One code: its default level, whether it runs by default, its documentation."""

    code: str
    level: str
    doc: str
    check: Callable[[LintContext], Iterable[Finding]] | None = None  # None: loading reports it
    default: bool = True
    stage: str = "meaning"  # one of STAGES
    origin: str = "loopguard"  # the plugin (package[entry]) that registered it
    effective: bool = False  # judges merged values (see the module docstring)

    @property
    def summary(self) -> str:
        return self.doc.strip().splitlines()[0].strip() if self.doc.strip() else ""

    @property
    def can_disable(self) -> bool:
        """Errors of the loading stages make a file unusable: lint cannot hide them."""
        return self.check is not None or self.level != "error"


def discover() -> list[ModuleType]:
    """Every check module of this package, in module-name order."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__))
    modules = [import_module(f"{__name__}.{name}") for name in names]
    return [m for m in modules if hasattr(m, "CODE")]


def from_module(module: ModuleType) -> LintCheck:
    """The `LintCheck` a check module declares (see the module docstring)."""
    doc = module.__doc__ or ""
    if getattr(module, "BLOCKS_LOAD", False):
        return LintCheck(module.CODE, module.LEVEL, doc, stage=module.STAGE)
    default, effective = getattr(module, "DEFAULT", True), getattr(module, "EFFECTIVE", False)
    return LintCheck(module.CODE, module.LEVEL, doc, module.check, default, effective=effective)


@hookimpl
def loopguard_register_lint_checks() -> list[LintCheck]:
    """The lint-only checks of this package."""
    return [from_module(m) for m in discover() if not getattr(m, "BLOCKS_LOAD", False)]


__all__ = ["STAGES", "LintCheck", "discover", "from_module"]
