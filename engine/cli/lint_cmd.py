"""`loopguard lint PATH... [--format F] [--strict] [--agent A]... [--disable/--enable CODE]...`.

Checks rules files (YAML, or OpenClaw JSON5 blocks); a directory is searched
recursively for the rules files among `*.yaml`, `*.yml`, `*.json5` and
`openclaw.json` (hidden folders skipped): those named `loopguard*` or inside a
`loopguard/` folder, `openclaw.json`, and those whose top level has `version`
and another rules key (other tools' YAML is skipped, and said so on stderr;
name a file to lint it anyway); `-` reads standard input and `builtin:NAME`
names a bundled pack. `--agent` (repeatable) names the agents that run: their thresholds are
checked, a name without a block and a block for no named agent are warnings.
`--disable CODE` / `--enable CODE` (repeatable, or comma-separated) choose the
checks; `--list-checks` lists them. Findings go to stdout; in text format a
one-line summary goes to stderr; text is coloured on a terminal (`--color
auto|always|never`, `NO_COLOR`). Exit 0 clean (warnings allowed), 1 errors (or
warnings with --strict), 2 usage or a file that cannot be read.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Collection, Sequence
from typing import Any

from loopguard.cli import add_extends_option
from loopguard.cli.colour import add_color_option, paint_finding, painted
from loopguard.cli.helptext import add_command
from loopguard.cli.lintlist import list_json, list_text
from loopguard.config.layers import MAX_BYTES
from loopguard.config.schema import default_assembly
from loopguard.findings import Finding
from loopguard.lint.linter import FileReport, checks, lint_bytes, lint_path, registry
from loopguard.text.github import escape_data, escape_property
from loopguard.text.terminal import output

SUFFIXES = (".yaml", ".yml", ".json5")
NAMES = ("openclaw.json",)
FORMATS = ("text", "json", "github")


def add_parser(subparsers: Any) -> None:
    parser = add_command(subparsers, "lint", "check rules files", __doc__)
    parser.add_argument(
        "files",
        nargs="*",
        metavar="PATH",
        help="rules file or directory, `builtin:NAME` for a bundled pack, or - for stdin",
    )
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format")
    parser.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    parser.add_argument(
        "--agent",
        metavar="A",
        action="append",
        default=None,
        help="an agent that runs (repeatable); default: judge every agent block",
    )
    parser.add_argument(
        "--disable",
        metavar="CODE",
        action="append",
        default=[],
        help="do not report CODE (repeatable, or CODE,CODE)",
    )
    parser.add_argument(
        "--enable",
        metavar="CODE",
        action="append",
        default=[],
        help="also report CODE, a check that is off by default",
    )
    parser.add_argument(
        "--list-checks",
        action="store_true",
        help="list every check code with its level and default, then exit (--format json: as JSON)",
    )
    add_extends_option(parser)
    add_color_option(parser)
    parser.set_defaults(run=run)


class SelectionError(ValueError):
    """`--disable`/`--enable` named an unknown code or one that cannot be turned off."""


def select(disable: Sequence[str] = (), enable: Sequence[str] = ()) -> frozenset[str]:
    """The active codes: the defaults, plus `enable`, minus `disable`."""
    known = checks()
    for code in (*disable, *enable):
        if code not in known:
            raise SelectionError(
                f"unknown lint check {code!r}; `loopguard lint --list-checks` lists them"
            )
    for code in disable:
        if not known[code].can_disable:
            raise SelectionError(
                f"{code!r} cannot be disabled: a file with that error does not load"
            )
    both = sorted(set(disable) & set(enable))
    if both:
        raise SelectionError(f"{', '.join(both)}: both --disable and --enable")
    active = {code for code, c in known.items() if c.default} | set(enable)
    return frozenset(active - set(disable))


def _summary(reports: list[FileReport]) -> str:
    errors = sum(r.errors for r in reports)
    warnings = sum(r.warnings for r in reports)
    files = f"{len(reports)} file" + ("s" if len(reports) != 1 else "")
    return (
        f"loopguard lint: {files}, {errors} error{'s' if errors != 1 else ''}, "
        f"{warnings} warning{'s' if warnings != 1 else ''}"
    )


def _codes(values: list[str]) -> list[str]:
    return [c.strip() for value in values for c in value.split(",") if c.strip()]


# what the pre-commit hook lints (.pre-commit-hooks.yaml): a rules file by its name or folder
NAMED = re.compile(r"(^|/)(loopguard[^/]*\.(ya?ml|json5)|loopguard/.+\.(ya?ml|json5))$")
SNIFF_BYTES = 64 * 1024
_TOP_KEY = re.compile(r"""^["']?([A-Za-z_][\w-]*)["']?\s*:""", re.MULTILINE)


def looks_like_rules(path: str, top_keys: Collection[str]) -> bool:
    """Whether a file found in a directory is a rules file, not another tool's YAML.

    Named like one (`NAMED`, `openclaw.json`), or: JSON5 mentioning `loopDetection` or
    `version`; YAML with a top-level `version` and another top-level key of the rules schema.
    A file that cannot be read counts (lint then says why it cannot be read).
    """
    if NAMED.search(path.replace(os.sep, "/")) or os.path.basename(path) in NAMES:
        return True
    try:
        with open(path, "rb") as handle:
            head = handle.read(SNIFF_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return True
    if path.endswith(".json5"):
        return "loopDetection" in head or "version" in head
    keys = set(_TOP_KEY.findall(head))
    return "version" in keys and bool(keys & set(top_keys) - {"version"})


def expand(name: str, top_keys: Collection[str] = ()) -> tuple[list[str], list[str]]:
    """A directory's rules files (sorted, recursive, hidden folders skipped) and the YAML/JSON5
    files it skipped as not rules files (`looks_like_rules`); a file or `-`: ([name], [])."""
    if name == "-" or name.startswith("builtin:") or not os.path.isdir(name):
        return [name], []
    found: list[str] = []
    skipped: list[str] = []
    for root, dirs, files in os.walk(name):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for file in sorted(files):
            if file.endswith(SUFFIXES) or file in NAMES:
                path = os.path.join(root, file)
                (found if looks_like_rules(path, top_keys) else skipped).append(path)
    return found, skipped


def _tell_skipped(name: str, skipped: list[str]) -> None:
    shown = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
    print(
        f"loopguard lint: {name}: skipped {len(skipped)} file{'s' if len(skipped) != 1 else ''} "
        f"that {'are not rules files' if len(skipped) != 1 else 'is not a rules file'} "
        f"({shown}); name a file to lint it anyway",
        file=sys.stderr,
    )


def run(args: argparse.Namespace) -> int:
    if args.list_checks:
        sys.stdout.write(list_json() if args.format == "json" else list_text())
        return 0
    if not args.files:
        print(
            "loopguard lint: name at least one rules file or directory (or --list-checks)",
            file=sys.stderr,
        )
        return 2
    try:
        active = select(_codes(args.disable), _codes(args.enable))
    except SelectionError as exc:
        print(f"loopguard lint: {exc}", file=sys.stderr)
        return 2
    assembly = default_assembly()
    for problem in (*assembly.problems, *registry().problems):
        print(f"loopguard: warning: {problem}", file=sys.stderr)
    names: list[str] = []
    top_keys = tuple(assembly.schema.get("properties") or ())
    for name in args.files:
        listed, skipped = expand(name, top_keys)
        if skipped:
            _tell_skipped(name, skipped)
        if not listed:
            print(
                f"loopguard lint: no rules files ({', '.join('*' + s for s in SUFFIXES)}, "
                f"{', '.join(NAMES)}) under {name}",
                file=sys.stderr,
            )
            return 2
        names.extend(listed)
    if names.count("-") > 1:
        print("loopguard lint: standard input (-) can be read only once", file=sys.stderr)
        return 2
    reports: list[FileReport] = []
    for name in names:
        if name == "-":
            raw = _read_stdin()
            if raw is None:
                return 2
            reports.append(
                lint_bytes(
                    raw,
                    "<stdin>",
                    args.agent,
                    assembly,
                    active,
                    args.allow_extends_outside,
                )
            )
        else:
            reports.append(
                lint_path(name, args.agent, assembly, active, args.allow_extends_outside)
            )
    findings = [f for r in reports for f in r.findings]
    out = painted(sys.stdout, args.color, paint_finding) if args.format == "text" else sys.stdout
    out = output(out, args.format)  # terminal controls in keys, values and file names escaped
    out.write(render(findings, args.format))
    out.flush()
    if args.format == "text":
        print(_summary(reports), file=sys.stderr)
    return exit_code(reports, args.strict)


def _read_stdin() -> bytes | None:
    """At most the rules limit + 1 byte of standard input (+1 to tell it is over); None, said
    on stderr, when stdin is closed (`<&-`) or cannot be read (a directory, an I/O error)."""
    if sys.stdin is None:
        problem = "standard input is closed"
    else:
        try:
            return sys.stdin.buffer.read(MAX_BYTES + 1)
        except (OSError, ValueError) as exc:  # ValueError: a closed file object
            problem = f"cannot read standard input: {getattr(exc, 'strerror', None) or exc}"
    print(f"loopguard lint: <stdin>: {problem}", file=sys.stderr)
    return None


def exit_code(reports: Sequence[FileReport], strict: bool = False) -> int:
    """0 clean, 1 errors (or warnings when strict), 2 a file could not be read."""
    if any(r.unreadable for r in reports):
        return 2
    if any(r.errors for r in reports) or (strict and any(r.warnings for r in reports)):
        return 1
    return 0


def format_text(findings: Sequence[Finding]) -> str:
    """`file:line:col: level[code]: message [path]` and an indented hint line."""
    return "".join(f.format_text(with_code=True) + "\n" for f in findings)


def format_json(findings: Sequence[Finding]) -> str:
    """A list of objects with file, line, col, level, message, path, hint, code."""
    return json.dumps([f.to_dict() for f in findings], ensure_ascii=False, indent=2) + "\n"


def format_github(findings: Sequence[Finding]) -> str:
    """`::error file=F,line=L,col=C,title=CODE::message [path]` (hint on a second line)."""
    lines = []
    for f in findings:
        command = "error" if f.level == "error" else "warning"
        message = f.message + (f" [{f.path}]" if f.path else "")
        if f.hint:
            message += f"\nhint: {f.hint}"
        title = f",title={escape_property(f.code)}" if f.code else ""
        lines.append(
            f"::{command} file={escape_property(f.file)},line={f.line},col={f.col}{title}::"
            f"{escape_data(message)}\n"
        )
    return "".join(lines)


def render(findings: Sequence[Finding], fmt: str) -> str:
    return {"text": format_text, "json": format_json, "github": format_github}[fmt](findings)
