"""A keyword set with no keywords: a condition using it can never match.

Passes: `keyword_sets: {buy: [buy, purchase]}`.
Fails: `keyword_sets: {buy: []}`.
"""

from __future__ import annotations

from loopguard.findings import Finding
from loopguard.lint.checks.context import LintContext, scopes

CODE = "empty-set"
LEVEL = "warning"


def check(ctx: LintContext) -> list[Finding]:
    return [
        ctx.finding(
            prefix + ("keyword_sets", name),
            LEVEL,
            f"keyword set {name!r} is empty",
            "add keywords or remove the set",
            CODE,
        )
        for prefix, block in scopes(ctx.top)
        for name, words in (block.get("keyword_sets") or {}).items()
        if not words
    ]
