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
import sys
from typing import Any

from loopguard.cli import add_extends_option
from loopguard.cli.colour import add_color_option, paint_config, painted
from loopguard.cli.helptext import add_command
from loopguard.cli.rules_errors import lint_errors, print_errors
from loopguard.config.layers import BASE, BUILTIN, Analysis
from loopguard.config.load import analyze_builtin, analyze_path
from loopguard.config.provenance import Effective, render_text, to_json, trace
from loopguard.text.terminal import output


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
    result: Analysis = (
        analyze_builtin(name)
        if name.startswith(BUILTIN)
        else analyze_path(name, allow_extends_outside=allow_extends_outside)
    )
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
