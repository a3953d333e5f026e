"""A keyword that is empty once the rules' normalisation (`strip`) has run.

An empty keyword matches nothing; it is usually a stray comma or quote.

Passes: `keyword_sets: {buy: [buy]}`.
Fails: `keyword_sets: {buy: [buy, "  "]}`.
"""

from __future__ import annotations

from loopguard.findings import Finding
from loopguard.lint.checks.context import LintContext, normaliser, scopes

CODE = "empty-keyword"
LEVEL = "warning"


def check(ctx: LintContext) -> list[Finding]:
    norm = normaliser(ctx.data)
    found: list[Finding] = []
    for prefix, block in scopes(ctx.top):
        for name, words in (block.get("keyword_sets") or {}).items():
            for i, word in enumerate(words if isinstance(words, list) else []):
                if isinstance(word, str) and not norm(word).strip():
                    found.append(
                        ctx.finding(
                            prefix + ("keyword_sets", name, i),
                            LEVEL,
                            "empty keyword",
                            "remove it; an empty keyword matches nothing",
                            CODE,
                        )
                    )
    return found
