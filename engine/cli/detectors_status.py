"""`loopguard detectors --rules R [--agent A]`: which detectors that file turns on, and why.

For each registered detector: on or off, and the reason `policy.compile.is_active`
has — its own `detectors.<id>.enabled`, the master switch
`loop_detection.enabled` (unset, true or false), and its gating (rolling,
unless_disabled, always); in JSON also the effective value of every shared
setting it declares it reads. Exit 2 on rules that cannot be loaded.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any

from loopguard.cli.colour import paint_detectors, painted
from loopguard.cli.config_cmd import dotted, load_effective
from loopguard.config.layers import BASE, REPAIRED, Effective
from loopguard.detection.detector import ROLLING, UNLESS_DISABLED, setting
from loopguard.detection.plugins import Registry
from loopguard.text.terminal import output


def statuses(effective: Effective, registry: Registry) -> list[dict[str, Any]]:
    """One dict per detector: id, gating, on, why, status, and where its switch was written."""
    config = effective.config
    enabled = (config.get("loop_detection") or {}).get("enabled")
    options_by_id = config.get("detectors") or {}
    listed = []
    for entry in registry.entries:
        gating = entry.detector.gating
        options = options_by_id.get(entry.id) or {}
        active, why = explain_active(gating, options, enabled)
        listed.append(
            {
                "id": entry.id,
                "gating": gating,
                "on": active,
                "why": why,
                "status": f"{'on' if active else 'off'} ({why}; {gating})",
                "switch": options.get("enabled"),
                "switch_from": _source(effective, ("detectors", entry.id, "enabled")),
                "settings": {path: setting(config, path) for path in entry.detector.settings},
            }
        )
    return listed


def _source(effective: Effective, path: tuple[str, ...]) -> str | None:
    source = effective.sources.get(path)
    return None if source == REPAIRED else source


def run_status(args: argparse.Namespace, registry: Registry) -> int:
    """Print the on/off table (or JSON) for `args.rules` / `args.agent`."""
    effective = load_effective(
        args.rules, args.agent, "loopguard detectors", getattr(args, "allow_extends_outside", False)
    )
    if effective is None:
        return 2
    name = args.rules if args.rules is not None else BASE
    enabled = (effective.config.get("loop_detection") or {}).get("enabled")
    master_from = _source(effective, ("loop_detection", "enabled"))
    listed = statuses(effective, registry)
    if registry.faults:
        print(
            f"loopguard detectors: {len(registry.faults)} plugin fault(s) left detectors out; "
            "`loopguard detectors` lists them",
            file=sys.stderr,
        )
    if args.format == "json":
        print(
            json.dumps(
                {
                    "rules": name,
                    "agent": args.agent,
                    "master": {
                        "path": dotted(("loop_detection", "enabled")),
                        "value": enabled,
                        "from": master_from,
                    },
                    "detectors": listed,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    master = "unset" if enabled is None else json.dumps(enabled)
    agent = f" for agent {args.agent}" if args.agent else ""
    out = output(painted(sys.stdout, getattr(args, "color", "never"), paint_detectors))
    print(
        f"detectors of {name}{agent}; loop_detection.enabled: {master}"
        + (f" (from {master_from})" if master_from else ""),
        file=out,
    )
    width = max((len(item["id"]) for item in listed), default=0)
    for item in listed:
        where = f"  # switch from {item['switch_from']}" if item["switch_from"] else ""
        print(f"  {item['id'].ljust(width)}  {item['status']}{where}", file=out)
    on = sum(1 for item in listed if item["on"])
    print(f"{on} of {len(listed)} detectors on", file=out)
    out.flush()
    return 0


def explain_active(gating: str, options: Mapping[str, Any], enabled: Any) -> tuple[bool, str]:
    """(on?, why) as `policy.compile.is_active` decides it: own switch, master switch, gating."""
    own = options.get("enabled")
    state = "true" if enabled is True else "false" if enabled is False else "unset"
    master = f"loop_detection.enabled is {state}"
    if gating in (ROLLING, UNLESS_DISABLED) and enabled is False:
        return False, master + (", over its own switch" if own is True else "")
    if own is not None and isinstance(own, bool):
        return own, "own switch"
    if gating == ROLLING:
        return enabled is True, master
    if gating == UNLESS_DISABLED:
        return True, master
    return True, "on by default"
