"""Lint warnings for detectors that a master switch keeps off (silent no-ops).

`loop_detection.enabled: false` turns off every rolling detector and
`post_compaction_guard` (see `policy.is_active`). Options written for such a
detector, or its explicit `enabled: true`, then do nothing: lint warns
(`gated-off`) at the detector's key or at its `enabled: true`.

Example (warns): `loop_detection: {enabled: false}` with
`detectors: {generic_repeat: {enabled: true}}` -> "generic_repeat is enabled
but loop_detection.enabled is false, so it never runs".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopguard.config.loadchecks import scopes
from loopguard.config.positions import PositionIndex
from loopguard.detection.plugins import load_registry
from loopguard.findings import Finding

_GATED = ("rolling", "unless_disabled")  # detector.ROLLING, detector.UNLESS_DISABLED


def _gating() -> dict[str, str]:
    """Detector id -> gating, from the registry (empty when it cannot load)."""
    try:
        return {e.id: e.detector.gating for e in load_registry().entries}
    except Exception:  # noqa: BLE001 - a broken plugin setup must not break lint
        return {}


def _master(block: Mapping[str, Any]) -> Any:
    loop = block.get("loop_detection")
    return loop.get("enabled") if isinstance(loop, Mapping) else None


def gate_checks(
    data: dict[str, Any],
    top: dict[str, Any],
    index: PositionIndex,
    gating: Mapping[str, str] | None = None,
) -> list[Finding]:
    """Warnings for detectors the linted file configures while the master switch is false."""
    gating = _gating() if gating is None else gating
    agents = data.get("agents") if isinstance(data.get("agents"), Mapping) else {}
    found: list[Finding] = []
    for prefix, block in scopes(top):
        if prefix:  # an agent block: its own master switch, else the global one
            merged = agents.get(prefix[1]) if isinstance(agents, Mapping) else None
            master = _master(merged) if isinstance(merged, Mapping) else None
            if master is None:
                master = _master(data)
        else:  # global options also run for agents whose own master switch is on
            master = _master(data)
            if any(
                isinstance(b, Mapping) and _master(b) is not None and _master(b) is not False
                for b in (agents or {}).values()
            ):
                continue
        if master is not False:
            continue
        detectors = block.get("detectors")
        for ident, options in detectors.items() if isinstance(detectors, Mapping) else ():
            if gating.get(ident) not in _GATED or not isinstance(options, Mapping):
                continue
            if options.get("enabled") is False:
                continue
            path = prefix + ("detectors", ident)
            if options.get("enabled") is True:
                found.append(
                    index.finding(
                        data,
                        path + ("enabled",),
                        "warning",
                        f"{ident} is enabled but loop_detection.enabled is false, so it never runs",
                        "set loop_detection.enabled to true (or remove it), or remove this switch",
                        "gated-off",
                    )
                )
            else:
                found.append(
                    index.finding(
                        data,
                        path,
                        "warning",
                        f"{ident} is configured but loop_detection.enabled "
                        "is false, so it never runs",
                        "set loop_detection.enabled to true (or "
                        "remove it), or remove these options",
                        "gated-off",
                        at_key=True,
                    )
                )
    return found
