"""A keyword listed twice in one set (after the rules' normalisation, e.g. `lower`).

Passes: `keyword_sets: {buy: [buy, purchase]}`.
Fails: `keyword_sets: {buy: [buy, Buy]}` with `turn: {normalize: [strip, lower]}`.
"""

from __future__ import annotations

from loopguard.lint.checks.context import Findings, LintContext, keyword_sets, normaliser

CODE = "duplicate-keyword"
LEVEL = "warning"


def check(ctx: LintContext) -> Findings:
    lists = ((path, words) for path, _, words in keyword_sets(ctx.top))
    return ctx.duplicates(lists, "keyword", LEVEL, CODE, normaliser(ctx.data))
