"""A keyword set with no keywords: a condition using it can never match.

Passes: `keyword_sets: {buy: [buy, purchase]}`.
Fails: `keyword_sets: {buy: []}`.
"""

from __future__ import annotations

from loopguard.lint.checks.context import Findings, LintContext, keyword_sets

CODE = "empty-set"
LEVEL = "warning"


def check(ctx: LintContext) -> Findings:
    hint = "add keywords or remove the set"
    return [
        ctx.finding(path, LEVEL, f"keyword set {name!r} is empty", hint, CODE)
        for path, name, words in keyword_sets(ctx.top)
        if not words
    ]
