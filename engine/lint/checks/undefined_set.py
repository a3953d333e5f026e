"""A condition names a keyword set that is not defined.

Fails: `when: {text_contains: portfolio_veiw}` (did you mean 'portfolio_view'?).
"""

from __future__ import annotations

from loopguard.lint.checks.context import Findings, LintContext, set_uses
from loopguard.text.hints import did_you_mean

CODE = "undefined-set"
LEVEL = "error"
STAGE = "references"
BLOCKS_LOAD = True  # run by the rules loader: rules with this error do not load


def check(ctx: LintContext) -> Findings:
    for prefix, block in ctx.merged_scopes():
        defined = {*(ctx.data.get("keyword_sets") or {}), *(block.get("keyword_sets") or {})}
        for where, name in set_uses(block, prefix):
            if name not in defined:
                message = f"undefined keyword set {name!r}{did_you_mean(name, defined)}"
                hint = "define it under keyword_sets, or fix the name"
                yield ctx.finding(where, LEVEL, message, hint, CODE)
