"""A detector configured or switched on while `loop_detection.enabled: false` keeps it off.

`loop_detection.enabled: false` turns off every rolling detector and
`post_compaction_guard`; their options, or an explicit `enabled: true`, then
do nothing. An agent's own master switch counts for its block.

Passes: `loop_detection: {enabled: false}` and no detector options.
Fails: `loop_detection: {enabled: false}` with `detectors: {generic_repeat: {enabled: true}}`
-> "generic_repeat is enabled but loop_detection.enabled is false, so it never runs".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopguard.detection.detector import ROLLING, UNLESS_DISABLED
from loopguard.detection.plugins import load_registry
from loopguard.findings import Finding
from loopguard.lint.checks.context import LintContext, scopes

CODE = "gated-off"
LEVEL = "warning"
GATED = (ROLLING, UNLESS_DISABLED)  # the gatings `loop_detection.enabled: false` turns off


def _gating() -> dict[str, str]:
    """Detector id -> gating, from the registry (empty when it cannot load)."""
    try:
        return {e.id: e.detector.gating for e in load_registry().entries}
    except Exception:  # noqa: BLE001 - a broken plugin setup must not break lint
        return {}


def _master(block: Mapping[str, Any]) -> Any:
    loop = block.get("loop_detection")
    return loop.get("enabled") if isinstance(loop, Mapping) else None


def _switched_off(data: dict[str, Any], prefix: tuple[Any, ...]) -> bool:
    """Does the master switch keep the detectors of this block of the linted file off?"""
    agents = data.get("agents") if isinstance(data.get("agents"), Mapping) else {}
    if prefix:  # an agent block: its own master switch, else the global one
        merged = agents.get(prefix[1]) if isinstance(agents, Mapping) else None
        master = _master(merged) if isinstance(merged, Mapping) else None
        return (_master(data) if master is None else master) is False
    # global options also run for agents whose own master switch is on
    if any(
        isinstance(b, Mapping) and _master(b) is not None and _master(b) is not False
        for b in (agents or {}).values()
    ):
        return False
    return _master(data) is False


def check(ctx: LintContext) -> list[Finding]:
    gating = _gating() if ctx.gating is None else ctx.gating
    found: list[Finding] = []
    for prefix, block in scopes(ctx.top):
        if not _switched_off(ctx.data, prefix):
            continue
        detectors = block.get("detectors")
        for ident, options in detectors.items() if isinstance(detectors, Mapping) else ():
            if gating.get(ident) not in GATED or not isinstance(options, Mapping):
                continue
            if options.get("enabled") is False:
                continue
            path = prefix + ("detectors", ident)
            if options.get("enabled") is True:
                found.append(
                    ctx.finding(
                        path + ("enabled",),
                        LEVEL,
                        f"{ident} is enabled but loop_detection.enabled is false, so it never runs",
                        "set loop_detection.enabled to true (or remove it), or remove this switch",
                        CODE,
                    )
                )
            else:
                found.append(
                    ctx.finding(
                        path,
                        LEVEL,
                        f"{ident} is configured but loop_detection.enabled "
                        "is false, so it never runs",
                        "set loop_detection.enabled to true (or "
                        "remove it), or remove these options",
                        CODE,
                        at_key=True,
                    )
                )
    return found
