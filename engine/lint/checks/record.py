"""The record of one lint code (`LintCheck`) and how a check module declares one.

Kept apart from the registry (`loopguard.lint.checks`) so that the modules the registry
collects — the stage codes, the built-in checks — can import it while the registry
imports them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from loopguard.findings import Finding
from loopguard.lint.checks.context import LintContext


@dataclass(frozen=True)
class LintCheck:
    """One code: its default level, whether it runs by default, its documentation."""

    code: str
    level: str
    doc: str
    check: Callable[[LintContext], Iterable[Finding]] | None = None  # None: a stage code
    default: bool = True
    stage: str = "meaning"  # read, syntax, root, schema, extends, references, meaning
    origin: str = "loopguard"  # the plugin (package[entry]) that registered it

    @property
    def summary(self) -> str:
        return self.doc.strip().splitlines()[0].strip() if self.doc.strip() else ""

    @property
    def can_disable(self) -> bool:
        """Errors of the loading stages make a file unusable: lint cannot hide them."""
        return self.check is not None or self.level != "error"


def from_module(module: Any, origin: str = "loopguard") -> LintCheck:
    """The `LintCheck` a check module declares (CODE, LEVEL, DEFAULT, check, docstring)."""
    return LintCheck(
        module.CODE,
        module.LEVEL,
        module.__doc__ or "",
        module.check,
        getattr(module, "DEFAULT", True),
        "meaning",
        origin,
    )
