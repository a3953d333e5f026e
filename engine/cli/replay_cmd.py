"""`loopguard replay FILE...`: what would loopguard have decided on recorded transcripts?

Exit codes: 0 done (and nothing reached `--fail-on`), 1 a decision reached the
`--fail-on` level (a skipped required tool counts as `warn`) or, under
`--fail-on`, an input warning dropped data or the rules file has lint errors
(printed on stderr before the report, as `loopguard lint` prints them; the
replay runs on the rules as the engine loads them); 2 usage error, unreadable
rules, or an input file that could not be read or held no tool call (the other
files are still replayed and reported). `FILE` may be `-`: standard input.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, TextIO

from loopguard.cli.colour import paint_report, painted
from loopguard.cli.explain_cmd import explain
from loopguard.cli.helptext import ParagraphFormatter, after_first_paragraph
from loopguard.cli.replay_files import once_each
from loopguard.cli.replay_html import HtmlReport
from loopguard.cli.replay_inputs import add_common, load_guard
from loopguard.cli.replay_machine import GithubReport, JsonReport
from loopguard.cli.replay_output import TextReport
from loopguard.cli.rules_errors import report_rules_errors
from loopguard.findings import Finding
from loopguard.replay.replayer import Replayer
from loopguard.text.terminal import ESCAPE_ERRORS, output, unwrapped

PROGRESS_MIN_BYTES = 16 * 1024 * 1024  # smaller inputs replay in a blink: no progress bar


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="replay recorded agent transcripts through the guard",
        description="Feed recorded agent conversations through the guard and report, call by call, "
        "where it would have warned, blocked or stopped the agent, and where a required "
        "tool was skipped.",
        epilog=after_first_paragraph(__doc__),
        formatter_class=ParagraphFormatter,
    )
    add_common(parser)
    parser.add_argument(
        "--format",
        choices=("text", "json", "github", "html"),
        default="text",
        help="report format: text (default), json (JSON lines), github (workflow annotations), "
        "html (one self-contained page; use with -o)",
    )
    parser.add_argument(
        "-o", "--output", metavar="PATH", help="write the report to PATH instead of standard output"
    )
    parser.add_argument(
        "--fail-on",
        choices=("warn", "critical", "breaker"),
        help="exit 1 when any decision reaches this level, any input warning dropped data, "
        "or the rules file has lint errors",
    )
    parser.add_argument(
        "--explain", metavar="N", help="explain decision N (or FILE#N) instead of the report"
    )
    parser.set_defaults(run=run)


class Progress:
    """A one-line progress indicator on stderr (only used when stderr is a terminal)."""

    def __init__(self, total: int) -> None:
        self.total = max(total, 1)

    def __call__(self, done: int) -> None:
        mb = 1024 * 1024
        stderr = unwrapped(sys.stderr)  # its own carriage returns, not escaped
        stderr.write(
            f"\rreplaying… {min(100, done * 100 // self.total):3d}% "
            f"({done // mb} of {self.total // mb} MB)"
        )
        stderr.flush()

    def close(self) -> None:
        stderr = unwrapped(sys.stderr)
        stderr.write("\r" + " " * 48 + "\r")
        stderr.flush()


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def make_progress(files: list[str]) -> Progress | None:
    """A progress line for large inputs, only when a person is watching stderr."""
    if not stderr_is_terminal():
        return None
    total = sum(os.path.getsize(f) for f in files if os.path.isfile(f))
    return Progress(total) if total >= PROGRESS_MIN_BYTES else None


def run(args: argparse.Namespace) -> int:
    args.files = once_each(args.files)
    if args.explain is not None:
        return explain(args, str(args.explain))
    guard = load_guard(args.rules, args.agent, args.allow_extends_outside)
    if guard is None:
        return 2
    rules_errors = report_rules_errors(args.rules, args.agent, args.allow_extends_outside)
    try:
        out: TextIO = (  # like stdout: a file name that is not UTF-8 is written as \udcXX
            open(args.output, "w", encoding="utf-8", errors=ESCAPE_ERRORS)
            if args.output
            else sys.stdout
        )
    except OSError as exc:
        print(
            f"{args.output}: error: cannot write the report: {exc.strerror or exc}", file=sys.stderr
        )
        return 2
    try:
        code = _replay(args, guard, out)
    finally:
        if out is not sys.stdout:
            out.close()
    if code == 0 and rules_errors and args.fail_on:
        return 1  # a CI gate never passes on rules that lint rejects
    return code


def _replay(args: argparse.Namespace, guard: Any, out: Any) -> int:
    """Replay into `out` (a text stream, or a wrapper over one that paints or escapes)."""
    rules = args.rules or "builtin:default"
    if args.format == "text":
        out = painted(out, args.color, paint_report)
    if args.format != "html":  # the page escapes for HTML itself
        out = output(out, args.format)  # terminal controls from the inputs escaped
    reporter: Any = {
        "text": lambda: TextReport(out, rules),
        "json": lambda: JsonReport(out),
        "github": lambda: GithubReport(out),
        "html": lambda: HtmlReport(out, rules),
    }[args.format]()
    progress = make_progress(args.files)
    replayer = Replayer(guard, args.agent, progress, join_sessions=args.join_sessions)
    try:
        for record in replayer.run(args.files, args.input_format):
            if isinstance(record, Finding) and record.level == "error":
                print(record.format_text(), file=sys.stderr)
            reporter.add(record)
    finally:
        if progress is not None:
            progress.close()
    reporter.finish()
    out.flush()
    if reporter.totals.errors:
        return 2
    return 1 if reporter.totals.failed(args.fail_on) else 0
