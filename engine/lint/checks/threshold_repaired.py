"""Merging layers (`extends:`, an agent's block) broke the threshold order; the engine repairs it.

The message shows the repaired numbers; set the value explicitly to say what
you mean. A block that already has a `threshold-order` error is not reported again.

Passes: `extends: [strict.yaml]` with thresholds that stay in order.
Fails: `extends: [strict.yaml]` (critical 12) and `loop_detection: {warning_threshold: 15}`
-> "critical_threshold 12 is not above warning_threshold 15; it is raised to 16".
"""

from __future__ import annotations

from loopguard.findings import Finding
from loopguard.lint.checks.context import LintContext
from loopguard.lint.thresholds import order_errors, repaired_checks

CODE = "threshold-repaired"
LEVEL = "warning"


def check(ctx: LintContext) -> list[Finding]:
    erred = order_errors(ctx.data, ctx.top, ctx.index)[1]
    return repaired_checks(ctx.data, ctx.top_name, ctx.index, erred, ctx.agents)
