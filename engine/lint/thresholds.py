"""The threshold walks behind three lint checks (`loopguard.lint.checks.threshold_order`,
`threshold_repaired`, `never_fires`): ordering, repairs after merging, thresholds that never fire.

- `threshold-order` (error): a block of the linted file writes both values of
  a pair and breaks warning < critical < global breaker.
- `threshold-repaired` (warning): merging (an `extends:` layer, an agent's
  override) produced an order the engine repairs at load time; the message
  shows the repaired numbers.
- `never-fires` (error): `warning_threshold` above `history_size` (the rolling
  history never holds that many calls), or a detector option above the
  option it is bounded by (`Detector.bounded_by`: a doom-loop `threshold` above
  its `window`). The critical, breaker and unknown-tool thresholds above
  `history_size` are warnings (the lower tiers still fire).

Example (fails): `loop_detection: {warning_threshold: 20, critical_threshold: 20}`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeGuard

from loopguard.config.effective import BREAKER, CRITICAL, WARNING, Repair, effective_config
from loopguard.config.loadchecks import scopes
from loopguard.config.positions import Path, PositionIndex
from loopguard.detection.plugins import load_registry
from loopguard.findings import Finding
from loopguard.lint.optionscopes import checked_scopes, place

PAIRS = ((WARNING, CRITICAL), (CRITICAL, BREAKER))
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


def _num(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def order_errors(
    data: dict[str, Any], top: dict[str, Any], index: PositionIndex
) -> tuple[list[Finding], set[tuple[Path, str]]]:
    """Ordering broken inside one block of the linted file; also which (scope, field) erred."""
    found: list[Finding] = []
    erred: set[tuple[Path, str]] = set()
    for prefix, block in scopes(top):
        loop = block.get("loop_detection")
        if not isinstance(loop, dict):
            continue
        pairs = list(PAIRS) if CRITICAL in loop else [(WARNING, BREAKER)]
        for low, high in pairs:
            a, b = loop.get(low), loop.get(high)
            if _num(a) and _num(b) and b <= a:
                found.append(
                    index.finding(
                        data,
                        prefix + ("loop_detection", high),
                        "error",
                        f"{high} ({b}) must be greater than {low} ({a})",
                        f"raise {high} above {a} or lower {low}",
                        "threshold-order",
                    )
                )
                erred.add((prefix, high))
    return found, erred


def _scope_configs(
    data: dict[str, Any], agents: tuple[str, ...] | None
) -> Iterator[tuple[Path, dict[str, Any], list[Repair], str]]:
    """Each judged scope with its effective config, repairs and " for agent 'NAME'" phrase."""
    for prefix in checked_scopes(data, agents):
        name = prefix[1] if prefix else None
        config, repairs = effective_config(data, name)
        yield prefix, config, repairs, f" for agent {name!r}" if name else ""


def repaired_checks(
    data: dict[str, Any],
    top_name: str,
    index: PositionIndex,
    erred: set[tuple[Path, str]],
    agents: tuple[str, ...] | None = None,
) -> list[Finding]:
    """Order repairs the engine makes in the effective config of each scope."""
    found: list[Finding] = []
    seen: set[tuple[Any, ...]] = set()
    for prefix, config, repairs, who in _scope_configs(data, agents):
        for repair in repairs:
            high = repair.field.rsplit(".", 1)[1]
            low = WARNING if high == CRITICAL else CRITICAL
            key = (high, repair.old, repair.new)
            if key in seen:
                continue  # an agent inheriting the global repair: reported once
            seen.add(key)
            if any(scope == prefix for scope, _ in erred):
                continue  # that very block already has an ordering error
            base = prefix + ("loop_detection",)
            fields = (high, low, WARNING)  # the repaired value, then what pushed it up
            path = place(
                index,
                top_name,
                [base + (f,) for f in fields] + [("loop_detection", f) for f in fields],
            )
            found.append(
                index.finding(
                    data,
                    path,
                    "warning",
                    f"after merging{who}, {high} {repair.old} is not above "
                    f"{low} {config['loop_detection'][low]}; it is raised to {repair.new}",
                    f"set {high} explicitly above {low}",
                    "threshold-repaired",
                )
            )
    return found


def never_checks(
    data: dict[str, Any], top_name: str, index: PositionIndex, agents: tuple[str, ...] | None = None
) -> list[Finding]:
    """Thresholds of each scope's effective config that can never be reached."""
    found: list[Finding] = []
    seen: set[tuple[Any, ...]] = set()
    for prefix, config, repairs, who in _scope_configs(data, agents):
        repaired = {r.field.rsplit(".", 1)[1] for r in repairs}
        found.extend(_never(data, config, prefix, top_name, index, seen, who, repaired))
    return found


def _never(
    data: dict[str, Any],
    config: dict[str, Any],
    prefix: Path,
    top_name: str,
    index: PositionIndex,
    seen: set[tuple[Any, ...]],
    who: str,
    repaired: set[str],
) -> list[Finding]:
    """Thresholds the history or window can never reach (repaired values are not judged)."""
    found: list[Finding] = []
    loop = config.get("loop_detection") or {}
    size = loop.get("history_size")
    for field, level in HISTORY_BOUND:
        value = loop.get(field)
        if field in repaired:
            continue
        if not (_num(size) and _num(value) and value > size) or (field, value, size) in seen:
            continue
        seen.add((field, value, size))
        base = prefix + ("loop_detection",)
        path = place(
            index,
            top_name,
            [
                base + (field,),
                base + ("history_size",),
                ("loop_detection", field),
                ("loop_detection", "history_size"),
            ],
        )
        found.append(
            index.finding(
                data,
                path,
                level,
                f"{field} {value} can never be reached{who}: history_size is "
                f"{size}, so the history never holds more than {size} calls",
                f"raise history_size to at least {value} or lower {field}",
                "never-fires",
            )
        )
    for ident, high, low in bounded_options():
        options = (config.get("detectors") or {}).get(ident) or {}
        window, threshold = options.get(low), options.get(high)
        if not (_num(window) and _num(threshold) and threshold > window):
            continue
        if (ident, high, window, threshold) in seen:
            continue
        seen.add((ident, high, window, threshold))
        base = prefix + ("detectors", ident)
        path = place(
            index,
            top_name,
            [base + (high,), base + (low,), ("detectors", ident, high), ("detectors", ident, low)],
        )
        found.append(
            index.finding(
                data,
                path,
                "error",
                f"{ident} {high} {threshold} can never be reached{who}: the "
                f"{low} holds only {window} calls",
                f"raise {low} to at least {threshold} or lower {high}",
                "never-fires",
            )
        )
    return found
