"""`loopguard detectors`: every registered detector and every plugin fault.

Detectors are listed in discovery order (built-ins first, then third-party
plugins sorted by distribution and entry name) with their source
`distribution[entry]`, default level(s), gating, the shared settings it reads,
its own lint checks and its options. An option's default is the `default` of
its options schema, the one place detectors declare defaults.

Exit codes: 0 (plugin faults are reported, not fatal); 1 with `--strict`
when there is at least one fault.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from loopguard.cli.colour import add_color_option, paint_detectors, painted
from loopguard.cli.config_cmd import add_rules_arguments
from loopguard.cli.detectors_status import run_status
from loopguard.detection.plugins import PluginFault, Registered, load_registry
from loopguard.text.terminal import output


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "detectors",
        help="list registered detectors and plugin faults",
        description="List every registered detector (built-in and plugin) and every plugin fault.",
    )
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a plugin has a fault")
    add_rules_arguments(parser)  # with --rules/--agent: which detectors are on, and why
    add_color_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    registry = load_registry()
    if args.rules is not None or args.agent is not None:
        return run_status(args, registry)
    listed = [describe(entry) for entry in registry.entries]
    faults = [_fault_dict(fault) for fault in registry.faults]
    if args.format == "json":
        print(json.dumps({"detectors": listed, "faults": faults}, indent=2, ensure_ascii=False))
    else:
        out = output(painted(sys.stdout, args.color, paint_detectors))  # plugins' texts escaped
        out.write(format_text(listed, faults) + "\n")
        out.flush()
    return 1 if args.strict and faults else 0


def describe(entry: Registered) -> dict[str, Any]:
    """One detector as a plain dict (the JSON shape; the text output is made from it)."""
    detector = entry.detector
    distribution, _, name = entry.source.partition("[")
    properties = (detector.options_schema or {}).get("properties") or {}
    defaults = detector.option_defaults()
    options: dict[str, Any] = {}
    for option, schema in properties.items():
        described: dict[str, Any] = {"schema": schema}
        if option in defaults:
            described["default"] = defaults[option]
        options[option] = described
    return {
        "id": entry.id,
        "source": entry.source,
        "distribution": distribution,
        "entry": name.rstrip("]"),
        "builtin": entry.builtin,
        "levels": list(detector.levels),
        "gating": detector.gating,
        "settings": list(detector.settings),
        "lint_checks": [getattr(c, "code", "?") for c in detector.lint_checks],
        "options": options,
    }


def format_text(listed: list[dict[str, Any]], faults: list[dict[str, str]]) -> str:
    """The human listing: one block per detector, then the faults and a summary line."""
    lines: list[str] = []
    for item in listed:
        kind = "built-in" if item["builtin"] else "plugin"
        lines.append(f"{item['id']}  ({kind}: {item['source']})")
        lines.append(f"  levels: {', '.join(item['levels']) or '-'}; gating: {item['gating']}")
        if item["settings"]:
            lines.append(f"  reads: {', '.join(item['settings'])}")
        if item["lint_checks"]:
            lines.append(f"  lint checks: {', '.join(item['lint_checks'])}")
        if not item["options"]:
            lines.append("  options: none")
            continue
        lines.append("  options:")
        rows = [
            (
                name,
                summarize(option["schema"]),
                f"default {_show(option['default'])}" if "default" in option else "",
            )
            for name, option in item["options"].items()
        ]
        width = max(len(row[0]) for row in rows)
        kinds = max(len(row[1]) for row in rows)
        for name, kind, default in rows:
            lines.append(f"    {name.ljust(width)}  {kind.ljust(kinds)}  {default}".rstrip())
    if faults:
        lines.append("faults:")
        lines.extend(f"  {f['source']}: {f['stage']} failed: {f['message']}" for f in faults)
    plugins = sum(1 for item in listed if not item["builtin"])
    lines.append(
        f"{len(listed)} detectors ({len(listed) - plugins} built-in, {plugins} "
        f"plugin{'' if plugins == 1 else 's'}), "
        f"{len(faults)} fault{'' if len(faults) == 1 else 's'}"
    )
    return "\n".join(lines)


def summarize(schema: Any) -> str:
    """A one-line reading of an option's JSON Schema: type, range or choices."""
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema:
        return " | ".join(_show(value) for value in schema["enum"])
    kind = schema.get("type", "any")
    text = " or ".join(kind) if isinstance(kind, list) else str(kind)
    if kind == "array" and isinstance(schema.get("items"), dict):
        text = f"list of {summarize(schema['items'])}"
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        text += f" {_show(low)}..{_show(high)}"
    elif low is not None:
        text += f" >= {_show(low)}"
    elif high is not None:
        text += f" <= {_show(high)}"
    return text


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _fault_dict(fault: PluginFault) -> dict[str, str]:
    return {"source": fault.source, "stage": fault.stage, "message": fault.message}
