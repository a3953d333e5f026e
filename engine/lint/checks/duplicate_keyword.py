"""A keyword listed twice in one set (after the rules' normalisation, e.g. `lower`).

Passes: `keyword_sets: {buy: [buy, purchase]}`.
Fails: `keyword_sets: {buy: [buy, Buy]}` with `turn: {normalize: [strip, lower]}`.
"""

from __future__ import annotations

from loopguard.findings import Finding
from loopguard.lint.checks.context import LintContext, keyword_sets, normaliser, repeats

CODE = "duplicate-keyword"
LEVEL = "warning"


def check(ctx: LintContext) -> list[Finding]:
    norm = normaliser(ctx.data)
    return [
        ctx.finding(
            path + (i,),
            LEVEL,
            f"duplicate keyword {item!r} (same as item {first + 1})",
            "remove it",
            CODE,
        )
        for path, _, words in keyword_sets(ctx.top)
        for i, item, first in repeats(words, norm)
    ]
