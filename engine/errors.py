"""Exceptions loopguard raises on bad input; each carries findings with positions."""

from __future__ import annotations

from collections.abc import Sequence

from loopguard.findings import Finding


def install_hint(extra: str) -> str:
    """How to install an optional extra (a framework, a store's client): from a package
    index, or in a clone of loopguard, where the index form does not work."""
    clone = f'pip install ".[{extra}]"'
    return f'pip install "loopguard-engine[{extra}]" (in a clone of loopguard: {clone})'


class LoopguardError(Exception):
    """Base class of every error loopguard raises on purpose."""


class RulesError(LoopguardError):
    """A rules file (or mapping) is invalid; `findings` says where and why."""

    def __init__(self, findings: Sequence[Finding]) -> None:
        self.findings = list(findings)
        first = self.findings[0].format_text() if self.findings else "invalid rules"
        others = len(self.findings) - 1
        if others > 0:  # on the finding's own line, not glued onto its hint
            line, newline, hint = first.partition("\n")
            first = f"{line} (and {others} more error{'s' if others != 1 else ''}){newline}{hint}"
        super().__init__(first)


class InputError(LoopguardError):
    """An input file (transcript, event log) cannot be read at all."""

    def __init__(self, findings: Sequence[Finding]) -> None:
        self.findings = list(findings)
        super().__init__(self.findings[0].format_text() if self.findings else "unreadable input")


def rules_error(message: str, path: str, hint: str = "") -> RulesError:
    """A rules error of a compiled section (`bad-intent`): no file position, a breadcrumb."""
    return RulesError([Finding("<rules>", 0, 0, "error", message, path, hint, "bad-intent")])
