"""A keyword that is empty once the rules' normalisation (`strip`) has run.

An empty keyword matches nothing; it is usually a stray comma or quote.

Passes: `keyword_sets: {buy: [buy]}`.
Fails: `keyword_sets: {buy: [buy, "  "]}`.
"""

from __future__ import annotations

from loopguard.lint.checks.context import Findings, LintContext, keyword_sets, normaliser

CODE = "empty-keyword"
LEVEL = "warning"


def check(ctx: LintContext) -> Findings:
    norm = normaliser(ctx.data)
    hint = "remove it; an empty keyword matches nothing"
    return [
        ctx.finding(path + (i,), LEVEL, "empty keyword", hint, CODE)
        for path, _, words in keyword_sets(ctx.top)
        for i, word in enumerate(words if isinstance(words, list) else [])
        if isinstance(word, str) and not norm(word).strip()
    ]
