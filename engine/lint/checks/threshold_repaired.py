"""Merging layers (`extends:`, an agent's block) broke the threshold order; the engine repairs it.

The message shows the repaired numbers; set the value explicitly to say what
you mean. A block that already has a `threshold-order` error is not reported again.

Passes: `extends: [strict.yaml]` with thresholds that stay in order.
Fails: `extends: [strict.yaml]` (critical 12) and `loop_detection: {warning_threshold: 15}`
-> "critical_threshold 12 is not above warning_threshold 15; it is raised to 16".
"""

from __future__ import annotations

from typing import Any

from loopguard.config.source import ORDER, WARNING
from loopguard.lint.checks.context import Findings, LintContext, effective_scopes
from loopguard.lint.checks.threshold_order import misordered

CODE = "threshold-repaired"
LEVEL = "warning"
EFFECTIVE = True  # judges merged values: nothing to say where the schema rejected one


def check(ctx: LintContext) -> Findings:
    erred = {prefix for prefix, *_ in misordered(ctx.top)}
    seen: set[tuple[Any, ...]] = set()
    for prefix, name, config, repairs in effective_scopes(ctx):
        who = f" for agent {name!r}" if name else ""
        for repair in repairs:
            high = repair.field.rsplit(".", 1)[1]
            low = next(low for low, above in ORDER if above == high)  # what it must exceed
            key = (high, repair.old, repair.new)
            if key in seen:
                continue  # an agent inheriting the global repair: reported once
            seen.add(key)
            if prefix in erred:
                continue  # that very block already has an ordering error
            # placed at the repaired value, else at what pushed it up
            path = ctx.place(prefix, ("loop_detection",), (high, low, WARNING))
            message = (
                f"after merging{who}, {high} {repair.old} is not above "
                f"{low} {config['loop_detection'][low]}; it is raised to {repair.new}"
            )
            yield ctx.finding(path, LEVEL, message, f"set {high} explicitly above {low}", CODE)
