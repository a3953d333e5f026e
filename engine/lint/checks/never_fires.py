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

from loopguard.config.source import BREAKER, CRITICAL, WARNING
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


def _over(value: Any, bound: Any) -> bool:
    return is_int(value) and is_int(bound) and value > bound


def check(ctx: LintContext) -> Findings:
    """Placed at the threshold or its bound, where the linted file (else any layer) wrote one;
    repaired values are not judged; a detector declares its own pairs in `bounded_by`."""
    seen: set[tuple[Any, ...]] = set()
    bounded = [(e.id, high, low) for e in detectors() for high, low in e.detector.bounded_by]
    for prefix, name, config, repairs in effective_scopes(ctx):
        who = f" for agent {name!r}" if name else ""
        repaired = {r.field.rsplit(".", 1)[1] for r in repairs}
        loop = config.get("loop_detection") or {}
        size = loop.get("history_size")
        for field, level in HISTORY_BOUND:
            value = loop.get(field)
            if field in repaired or not _over(value, size) or (field, value, size) in seen:
                continue
            seen.add((field, value, size))
            message = (
                f"{field} {value} can never be reached{who}: history_size is {size}, "
                f"so the history never holds more than {size} calls"
            )
            hint = f"raise history_size to at least {value} or lower {field}"
            path = ctx.place(prefix, ("loop_detection",), (field, "history_size"))
            yield ctx.finding(path, level, message, hint, CODE)
        for ident, high, low in bounded:
            options = (config.get("detectors") or {}).get(ident) or {}
            window, threshold = options.get(low), options.get(high)
            if not _over(threshold, window) or (ident, high, window, threshold) in seen:
                continue
            seen.add((ident, high, window, threshold))
            message = (
                f"{ident} {high} {threshold} can never be reached{who}: "
                f"the {low} holds only {window} calls"
            )
            hint = f"raise {low} to at least {threshold} or lower {high}"
            path = ctx.place(prefix, ("detectors", ident), (high, low))
            yield ctx.finding(path, LEVEL, message, hint, CODE)
