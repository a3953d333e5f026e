"""`loopguard lint FILE... [--format text|json|github] [--strict] [--agent A] [--color WHEN]`.

Checks rules files (YAML, or OpenClaw JSON5 blocks); `-` reads standard
input and `builtin:NAME` names a bundled pack. Findings go to stdout; in text
format a one-line summary goes to stderr; text is coloured on a terminal
(`--color auto|always|never`, `NO_COLOR`). Exit 0 clean (warnings allowed),
1 errors (or warnings with --strict), 2 usage or a file that cannot be read.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..lint import FORMATS, FileReport, exit_code, lint_bytes, lint_path, render
from ..schema import default_assembly
from .colour import add_color_option, paint_finding, painted


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "lint", help="check rules files", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="rules file, `builtin:NAME` for a bundled pack, or - for stdin")
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format")
    parser.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    parser.add_argument("--agent", metavar="A", default=None,
                        help="check the thresholds as agent A sees them (default: every agent)")
    add_color_option(parser)
    parser.set_defaults(run=run)


def _summary(reports: list[FileReport]) -> str:
    errors = sum(r.errors for r in reports)
    warnings = sum(r.warnings for r in reports)
    files = f"{len(reports)} file" + ("s" if len(reports) != 1 else "")
    return (f"loopguard lint: {files}, {errors} error{'s' if errors != 1 else ''}, "
            f"{warnings} warning{'s' if warnings != 1 else ''}")


def run(args: argparse.Namespace) -> int:
    assembly = default_assembly()
    for problem in assembly.problems:
        print(f"loopguard: warning: {problem}", file=sys.stderr)
    reports: list[FileReport] = []
    stdin_used = False
    for name in args.files:
        if name == "-":
            if stdin_used:
                print("loopguard lint: standard input (-) can be read only once", file=sys.stderr)
                return 2
            stdin_used = True
            reports.append(lint_bytes(sys.stdin.buffer.read(), "<stdin>", args.agent, assembly))
        else:
            reports.append(lint_path(name, args.agent, assembly))
    findings = [f for r in reports for f in r.findings]
    out = painted(sys.stdout, args.color, paint_finding) if args.format == "text" else sys.stdout
    out.write(render(findings, args.format))
    out.flush()
    if args.format == "text":
        print(_summary(reports), file=sys.stderr)
    return exit_code(reports, args.strict)
