"""A detector listed twice in `aggregator.order` (the second mention changes nothing).

Passes: `aggregator: {order: [ping_pong, cycle]}`.
Fails: `aggregator: {order: [ping_pong, cycle, ping_pong]}`.
"""

from __future__ import annotations

from loopguard.findings import Finding
from loopguard.lint.checks.context import LintContext, repeats, scopes

CODE = "duplicate-detector"
LEVEL = "warning"


def check(ctx: LintContext) -> list[Finding]:
    return [
        ctx.finding(
            prefix + ("aggregator", "order", i),
            LEVEL,
            f"duplicate detector {item!r} (same as item {first + 1})",
            "remove it",
            CODE,
        )
        for prefix, block in scopes(ctx.top)
        for i, item, first in repeats((block.get("aggregator") or {}).get("order"), str)
    ]
