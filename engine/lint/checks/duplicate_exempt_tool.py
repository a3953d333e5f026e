"""A tool listed twice in a detector's `exempt` list.

Passes: `detectors: {generic_repeat: {exempt: [read, ls]}}`.
Fails: `detectors: {generic_repeat: {exempt: [read, read]}}`.
"""

from __future__ import annotations

from loopguard.findings import Finding
from loopguard.lint.checks.context import LintContext, repeats, scopes

CODE = "duplicate-exempt-tool"
LEVEL = "warning"


def check(ctx: LintContext) -> list[Finding]:
    return [
        ctx.finding(
            prefix + ("detectors", ident, "exempt", i),
            LEVEL,
            f"duplicate exempt tool {item!r} (same as item {first + 1})",
            "remove it",
            CODE,
        )
        for prefix, block in scopes(ctx.top)
        for ident, options in (block.get("detectors") or {}).items()
        for i, item, first in repeats(isinstance(options, dict) and options.get("exempt"), str)
    ]
