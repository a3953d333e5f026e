"""A detector listed twice in `aggregator.order` (the second mention changes nothing).

Passes: `aggregator: {order: [ping_pong, cycle]}`.
Fails: `aggregator: {order: [ping_pong, cycle, ping_pong]}`.
"""

from __future__ import annotations

from loopguard.lint.checks.context import Findings, LintContext, scopes

CODE = "duplicate-detector"
LEVEL = "warning"


def check(ctx: LintContext) -> Findings:
    lists = (
        (prefix + ("aggregator", "order"), (block.get("aggregator") or {}).get("order"))
        for prefix, block in scopes(ctx.top)
    )
    return ctx.duplicates(lists, "detector", LEVEL, CODE)
