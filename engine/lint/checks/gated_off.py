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
from loopguard.lint.checks.context import Findings, LintContext, detectors, scopes

CODE = "gated-off"
LEVEL = "warning"
GATED = (ROLLING, UNLESS_DISABLED)  # the gatings `loop_detection.enabled: false` turns off


def _master(block: Any) -> Any:
    loop = block.get("loop_detection") if isinstance(block, Mapping) else None
    return loop.get("enabled") if isinstance(loop, Mapping) else None


def _switched_off(data: dict[str, Any], prefix: tuple[Any, ...]) -> bool:
    """Does the master switch keep the detectors of this block of the linted file off?"""
    agents = data.get("agents")
    agents = agents if isinstance(agents, Mapping) else {}
    if prefix:  # an agent block: its own master switch, else the global one
        master = _master(agents.get(prefix[1]))
        return (_master(data) if master is None else master) is False
    # global options also run for agents whose own master switch is on
    on = [b for b in agents.values() if _master(b) is not None and _master(b) is not False]
    return _master(data) is False and not on


def check(ctx: LintContext) -> Findings:
    gating = {e.id: e.detector.gating for e in detectors()}
    for prefix, block in scopes(ctx.top):
        configured = block.get("detectors")
        if not _switched_off(ctx.data, prefix) or not isinstance(configured, Mapping):
            continue
        for ident, options in configured.items():
            switch = options.get("enabled") if isinstance(options, Mapping) else False
            if gating.get(ident) not in GATED or switch is False:
                continue
            on = switch is True
            state, gone = ("enabled", "this switch") if on else ("configured", "these options")
            path = prefix + ("detectors", ident) + (("enabled",) if on else ())
            message = f"{ident} is {state} but loop_detection.enabled is false, so it never runs"
            hint = f"set loop_detection.enabled to true (or remove it), or remove {gone}"
            yield ctx.finding(path, LEVEL, message, hint, CODE, at_key=not on)
