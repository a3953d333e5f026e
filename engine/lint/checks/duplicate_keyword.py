"""A keyword listed twice in one set (after the rules' normalisation, e.g. `lower`).

Passes: `keyword_sets: {buy: [buy, purchase]}`.
Fails: `keyword_sets: {buy: [buy, Buy]}` with `turn: {normalize: [strip, lower]}`.
"""

from __future__ import annotations

from loopguard.findings import Finding
from loopguard.lint.checks.context import LintContext, normaliser, repeats, scopes

CODE = "duplicate-keyword"
LEVEL = "warning"


def check(ctx: LintContext) -> list[Finding]:
    norm = normaliser(ctx.data)
    return [
        ctx.finding(
            prefix + ("keyword_sets", name, i),
            LEVEL,
            f"duplicate keyword {item!r} (same as item {first + 1})",
            "remove it",
            CODE,
        )
        for prefix, block in scopes(ctx.top)
        for name, words in (block.get("keyword_sets") or {}).items()
        for i, item, first in repeats(words, norm)
    ]
