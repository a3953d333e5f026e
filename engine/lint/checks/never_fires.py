"""A threshold the engine can never reach.

`warning_threshold` above `history_size` (the history never holds that many
calls) and a doom-loop `threshold` above its `window` are errors; the
critical, breaker and unknown-tool thresholds above `history_size` are
warnings (the lower tiers still fire). With `--agent`, only the named agents'
effective settings (and the global ones) are judged.

Passes: `loop_detection: {warning_threshold: 5, history_size: 30}`.
Fails: `loop_detection: {warning_threshold: 40, history_size: 30}`.
"""

from __future__ import annotations

from typing import Any

from loopguard.config.source import BREAKER, CRITICAL, WARNING, Path
from loopguard.lint.checks.context import Findings, LintContext, detectors, effective_scopes
from loopguard.text.hints import is_int

CODE = "never-fires"
LEVEL = "error"
EFFECTIVE = True  # judges merged values: nothing to say where the schema rejected one
HISTORY_BOUND = (
    (WARNING, "error"),
    (CRITICAL, "warning"),
    (BREAKER, "warning"),
    ("unknown_tool_threshold", "warning"),
)


def check(ctx: LintContext) -> Findings:
    """Placed at the threshold or its bound, where the linted file (else any layer) wrote one;
    repaired values are not judged; a detector declares its own pairs in `bounded_by`."""
    seen: set[tuple[Any, ...]] = set()
    bounded = [(e.id, high, low) for e in detectors() for high, low in e.detector.bounded_by]
    for prefix, name, config, repairs in effective_scopes(ctx):
        who = f" for agent {name!r}" if name else ""
        repaired = {r.field.rsplit(".", 1)[1] for r in repairs}
        loop, options = config.get("loop_detection") or {}, config.get("detectors") or {}
        pairs: list[tuple[Path, Any, str, str, str]] = [
            (("loop_detection",), loop, high, "history_size", level)
            for high, level in HISTORY_BOUND
            if high not in repaired
        ]
        pairs += [
            (("detectors", ident), options.get(ident) or {}, high, low, LEVEL)
            for ident, high, low in bounded
        ]
        for block, values, high, low, level in pairs:
            value, bound = values.get(high), values.get(low)
            over = is_int(value) and is_int(bound) and value > bound
            if not over or (block, high, value, bound) in seen:
                continue
            seen.add((block, high, value, bound))
            if block == ("loop_detection",):
                message = f"{high} {value} can never be reached{who}: history_size is {bound}, "
                message += f"so the history never holds more than {bound} calls"
            else:
                message = f"{block[1]} {high} {value} can never be reached{who}: "
                message += f"the {low} holds only {bound} calls"
            hint = f"raise {low} to at least {value} or lower {high}"
            yield ctx.finding(ctx.place(prefix, block, (high, low)), level, message, hint, CODE)
