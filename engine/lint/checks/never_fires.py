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
from loopguard.detection.plugins import load_registry
from loopguard.findings import Finding
from loopguard.lint.checks.context import LintContext, effective_scopes, place
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


def bounded_options() -> list[tuple[str, str, str]]:
    """(detector id, threshold option, window option) that every registered detector declares
    in `bounded_by` (e.g. a doom-loop `threshold` can never exceed its `window`)."""
    try:
        registry = load_registry()
    except Exception:  # noqa: BLE001 - a broken plugin setup must not break lint
        return []
    return [
        (entry.id, high, low)
        for entry in registry.entries
        for high, low in entry.detector.bounded_by
    ]


def check(ctx: LintContext) -> list[Finding]:
    """Thresholds the history or window can never reach (repaired values are not judged)."""
    found: list[Finding] = []
    seen: set[tuple[Any, ...]] = set()
    for prefix, name, config, repairs in effective_scopes(ctx):
        who = f" for agent {name!r}" if name else ""
        repaired = {r.field.rsplit(".", 1)[1] for r in repairs}
        loop = config.get("loop_detection") or {}
        size = loop.get("history_size")
        for field, level in HISTORY_BOUND:
            value = loop.get(field)
            if field in repaired:
                continue
            if (
                not (is_int(size) and is_int(value) and value > size)
                or (field, value, size) in seen
            ):
                continue
            seen.add((field, value, size))
            base = prefix + ("loop_detection",)
            path = place(
                ctx,
                [
                    base + (field,),
                    base + ("history_size",),
                    ("loop_detection", field),
                    ("loop_detection", "history_size"),
                ],
            )
            found.append(
                ctx.finding(
                    path,
                    level,
                    f"{field} {value} can never be reached{who}: history_size is "
                    f"{size}, so the history never holds more than {size} calls",
                    f"raise history_size to at least {value} or lower {field}",
                    CODE,
                )
            )
        for ident, high, low in bounded_options():
            options = (config.get("detectors") or {}).get(ident) or {}
            window, threshold = options.get(low), options.get(high)
            if not (is_int(window) and is_int(threshold) and threshold > window):
                continue
            if (ident, high, window, threshold) in seen:
                continue
            seen.add((ident, high, window, threshold))
            base = prefix + ("detectors", ident)
            path = place(
                ctx,
                [
                    base + (high,),
                    base + (low,),
                    ("detectors", ident, high),
                    ("detectors", ident, low),
                ],
            )
            found.append(
                ctx.finding(
                    path,
                    LEVEL,
                    f"{ident} {high} {threshold} can never be reached{who}: the "
                    f"{low} holds only {window} calls",
                    f"raise {low} to at least {threshold} or lower {high}",
                    CODE,
                )
            )
    return found
