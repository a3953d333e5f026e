"""`loopguard config [--rules R] [--agent A] [--format text|json]`: the effective rules.

Prints what the engine runs with: `builtin:default`, the `extends:` layers and the file merged, the
agent's block merged over them, the thresholds repaired; each leaf says where it came from
(`file:line`, `builtin:NAME:line`, or `repaired`; coloured on a terminal: `--color`, `NO_COLOR`).
Lint errors of a file that still loads (thresholds out of order, a threshold that can never
fire) go to stderr first, as `loopguard lint` prints them; the values shown are the repaired ones.
Exit 0, or 2 for a file that cannot be read, invalid rules or an agent without a block (the errors
go to stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Sequence
from typing import Any

from loopguard.cli import add_extends_option
from loopguard.cli.colour import add_color_option, paint_config, painted
from loopguard.cli.helptext import add_command
from loopguard.cli.rules_errors import lint_errors, print_errors
from loopguard.config.layers import BASE, REPAIRED, Effective, analyze, is_leaf, trace
from loopguard.config.source import Path
from loopguard.text.terminal import output

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_ .\-/]*$")
_RESERVED = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"}
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def add_parser(subparsers: Any) -> None:
    parser = add_command(
        subparsers, "config", "print the effective rules and where each value came from", __doc__
    )
    add_rules_arguments(parser)
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    add_color_option(parser)
    parser.set_defaults(run=run)


def add_rules_arguments(parser: argparse.ArgumentParser) -> None:
    """`--rules R` and `--agent A`, shared with `loopguard detectors`."""
    parser.add_argument(
        "--rules", metavar="R", default=None, help=f"rules file or `builtin:NAME` (default: {BASE})"
    )
    parser.add_argument(
        "--agent", metavar="A", default=None, help="merge agent A's block over the global blocks"
    )
    add_extends_option(parser)


def load_effective(
    rules: str | None, agent: str | None, prog: str, allow_extends_outside: bool = False
) -> Effective | None:
    """The effective rules of `agent` in `rules`, or None after telling stderr why not."""
    name = rules if rules is not None else BASE
    result = analyze(name, allow_extends_outside=allow_extends_outside)
    for finding in result.findings:
        if finding.level != "error":
            print(finding.format_text(), file=sys.stderr)
    if result.errors or result.data is None:
        if result.unreadable:
            reason = result.errors[0].message if result.errors else "cannot be read"
            print(f"{prog}: {name}: {reason}", file=sys.stderr)
            return None
        for finding in result.errors:
            print(finding.format_text(), file=sys.stderr)
        count = len(result.errors)
        print(
            f"{prog}: {name}: invalid rules ({count} error{'s' if count != 1 else ''}; "
            f"see `loopguard lint {name}`)",
            file=sys.stderr,
        )
        return None
    agents = result.data.get("agents") or {}
    if agent is not None and agent not in agents:
        known = ", ".join(sorted(agents)) or "none"
        print(f"{prog}: {name}: no agent {agent!r} (agents with a block: {known})", file=sys.stderr)
        return None
    print_errors(name, lint_errors(result, agent))
    return trace(result.layers, result.data, agent)


def run(args: argparse.Namespace) -> int:
    effective = load_effective(
        args.rules, args.agent, "loopguard config", args.allow_extends_outside
    )
    if effective is None:
        return 2
    name = args.rules if args.rules is not None else BASE
    if args.format == "json":
        shown = {"rules": name, "agent": args.agent, **to_json(effective)}
        print(json.dumps(shown, indent=2, ensure_ascii=False), file=output(sys.stdout, "json"))
        return 0
    header = [f"effective rules of {name}" + (f" for agent {args.agent}" if args.agent else "")]
    out = output(painted(sys.stdout, args.color, paint_config))  # terminal controls escaped
    out.write(render_text(effective, header))
    out.flush()
    return 0


def dotted(path: Path) -> str:
    """`loop_detection.warning_threshold`, `intents[0].id`, `outcomes.tools["a.b"].drop`."""
    text = ""
    for step in path:
        if isinstance(step, int):
            text += f"[{step}]"
        elif _BARE_KEY.match(str(step)):
            text += f".{step}" if text else str(step)
        else:
            text += f"[{json.dumps(step, ensure_ascii=False)}]"
    return text


def flow(value: Any) -> str:
    """A leaf as YAML text that reads back as the same value (quoted when it must be)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else ".inf" if value > 0 else "-.inf"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        plain = _PLAIN.match(value) and not value.endswith(" ") and value.lower() not in _RESERVED
        if plain:
            return value
        if value.isprintable() and value.strip() == value:  # readable regexes
            return "'" + value.replace("'", "''") + "'"
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "{}"
    return "[" + ", ".join(flow(item) for item in value) + "]"


def yaml_lines(value: Any, path: Path = (), indent: int = 0) -> list[tuple[str, Path | None]]:
    """Block-style YAML of a mapping or list: (line, leaf path or None for a header)."""
    pad = " " * indent
    lines: list[tuple[str, Path | None]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for step, item in items:
        here = path + (step,)
        head = f"{pad}{flow(step) if isinstance(step, str) else '-'}"
        sep = ":" if isinstance(step, str) else ""
        if is_leaf(item):
            lines.append((f"{head}{sep} {flow(item)}", here))
        elif isinstance(item, dict) and not isinstance(step, str):
            inner = yaml_lines(item, here, indent + 2)
            lines.append((f"{pad}- {inner[0][0][indent + 2 :]}", inner[0][1]))
            lines.extend(inner[1:])
        else:
            lines.append((f"{head}{sep}", None))
            lines.extend(yaml_lines(item, here, indent + 2))
    return lines


def render_text(effective: Effective, header: Sequence[str] = ()) -> str:
    """The effective rules as YAML, each leaf with a trailing `# from …` comment."""
    body = yaml_lines(effective.config)
    width = min(56, max((len(text) for text, leaf in body if leaf is not None), default=0))
    notes = {repair.field: f"was {repair.old} from {where}" for repair, where in effective.repairs}
    out = [f"# {line}" for line in header]
    for text, leaf in body:
        if leaf is None:
            out.append(text)
            continue
        source = effective.sources.get(leaf, "unknown")
        note = f"# from {source}" if source != REPAIRED else f"# repaired ({notes[dotted(leaf)]})"
        out.append(f"{text.ljust(width)}  {note}")
    return "\n".join(out) + "\n"


def to_json(effective: Effective) -> dict[str, Any]:
    """The JSON shape: `config`, a parallel `sources` map of dotted paths, and `repairs`."""
    return {
        "config": effective.config,
        "sources": {dotted(path): source for path, source in effective.sources.items()},
        "repairs": [
            {"path": repair.field, "old": repair.old, "new": repair.new, "from": where}
            for repair, where in effective.repairs
        ],
    }
