"""A block of the linted file writes both thresholds of a pair in the wrong order.

Thresholds must rise: `warning_threshold` < `critical_threshold` <
`global_circuit_breaker_threshold` (warning < breaker when critical is not written).

Passes: `loop_detection: {warning_threshold: 5, critical_threshold: 8}`.
Fails: `loop_detection: {warning_threshold: 20, critical_threshold: 20}`.
"""

from __future__ import annotations

from loopguard.findings import Finding
from loopguard.lint.checks.context import LintContext
from loopguard.lint.thresholds import order_errors

CODE = "threshold-order"
LEVEL = "error"


def check(ctx: LintContext) -> list[Finding]:
    return order_errors(ctx.data, ctx.top, ctx.index)[0]
