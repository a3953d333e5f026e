"""A block of the linted file writes both thresholds of a pair in the wrong order.

Thresholds must rise: `warning_threshold` < `critical_threshold` <
`global_circuit_breaker_threshold` (warning < breaker when critical is not written).

Passes: `loop_detection: {warning_threshold: 5, critical_threshold: 8}`.
Fails: `loop_detection: {warning_threshold: 20, critical_threshold: 20}`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from loopguard.config.source import BREAKER, CRITICAL, ORDER, WARNING, Path
from loopguard.lint.checks.context import Findings, LintContext, scopes
from loopguard.text.hints import is_int

CODE = "threshold-order"
LEVEL = "error"


def misordered(top: dict[str, Any]) -> Iterator[tuple[Path, str, int, str, int]]:
    """(scope, lower field, its value, higher field, its value) of each pair a block breaks."""
    for prefix, block in scopes(top):
        loop = block.get("loop_detection")
        if not isinstance(loop, dict):
            continue
        pairs = ORDER if CRITICAL in loop else ((WARNING, BREAKER),)
        for low, high in pairs:
            a, b = loop.get(low), loop.get(high)
            if is_int(a) and is_int(b) and b <= a:
                yield prefix, low, a, high, b


def check(ctx: LintContext) -> Findings:
    for prefix, low, a, high, b in misordered(ctx.top):
        message = f"{high} ({b}) must be greater than {low} ({a})"
        hint = f"raise {high} above {a} or lower {low}"
        yield ctx.finding(prefix + ("loop_detection", high), LEVEL, message, hint, CODE)
