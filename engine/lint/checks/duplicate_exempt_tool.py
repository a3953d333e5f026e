"""A tool listed twice in a detector's `exempt` list.

Passes: `detectors: {generic_repeat: {exempt: [read, ls]}}`.
Fails: `detectors: {generic_repeat: {exempt: [read, read]}}`.
"""

from __future__ import annotations

from loopguard.lint.checks.context import Findings, LintContext, scopes

CODE = "duplicate-exempt-tool"
LEVEL = "warning"


def check(ctx: LintContext) -> Findings:
    lists = (
        (prefix + ("detectors", ident, "exempt"), options.get("exempt"))
        for prefix, block in scopes(ctx.top)
        for ident, options in (block.get("detectors") or {}).items()
        if isinstance(options, dict)
    )
    return ctx.duplicates(lists, "exempt tool", LEVEL, CODE)
