"""`loopguard replay FILE...`: what would loopguard have decided on recorded transcripts?

Exit codes: 0 done (and nothing reached `--fail-on`), 1 a decision reached the
`--fail-on` level (a skipped required tool counts as `warn`), 2 usage error,
unreadable rules, or an unreadable input file (the other files are still
replayed and reported).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..decision import RANK
from ..errors import LoopguardError, RulesError
from ..findings import Finding
from ..replay import Replayer
from ..transcripts import FORMATS
from .replay_output import GithubReport, JsonReport, TextReport

PROGRESS_MIN_BYTES = 16 * 1024 * 1024  # smaller inputs replay in a blink: no progress bar


def add_common(parser: argparse.ArgumentParser) -> None:
    """Options shared by `replay` and `explain`."""
    parser.add_argument("files", nargs="+", metavar="FILE", help="transcript files (JSON or JSONL)")
    parser.add_argument("--rules", metavar="R", help="rules file or builtin:NAME (default: the bundled builtin:default rules)")
    parser.add_argument("--agent", metavar="A", help="use the per-agent overrides of agent A from the rules")
    parser.add_argument("--input-format", choices=FORMATS, help="skip format detection and read FILEs as this")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "replay", help="replay recorded agent transcripts through the guard",
        description="Feed recorded agent conversations through the guard and report, call by call, "
                    "where it would have warned, blocked or stopped the agent, and where a required "
                    "tool was skipped.")
    add_common(parser)
    parser.add_argument("--format", choices=("text", "json", "github"), default="text",
                        help="report format: text (default), json (JSON lines), github (workflow annotations)")
    parser.add_argument("--fail-on", choices=("warn", "critical", "breaker"),
                        help="exit 1 when any decision reaches this level")
    parser.add_argument("--explain", type=int, metavar="N", help="explain decision #N instead of the report")
    parser.set_defaults(run=run)


def load_guard(rules: str | None) -> Any:
    """The guard for the given rules file; prints the problems and returns None when it cannot load."""
    import loopguard

    try:
        return loopguard.Guard.from_file(rules) if rules else loopguard.Guard.default()
    except RulesError as exc:
        for finding in exc.findings:
            print(finding.format_text(), file=sys.stderr)
    except (LoopguardError, OSError) as exc:
        print(f"{rules}: error: {exc}", file=sys.stderr)
    return None


class Progress:
    """A one-line progress indicator on stderr (only used when stderr is a terminal)."""

    def __init__(self, total: int) -> None:
        self.total = max(total, 1)

    def __call__(self, done: int) -> None:
        mb = 1024 * 1024
        sys.stderr.write(f"\rreplaying… {min(100, done * 100 // self.total):3d}% "
                         f"({done // mb} of {self.total // mb} MB)")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\r" + " " * 48 + "\r")
        sys.stderr.flush()


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
    if args.explain is not None:
        from .explain_cmd import explain

        return explain(args, args.explain)
    guard = load_guard(args.rules)
    if guard is None:
        return 2
    out = sys.stdout
    reporter: Any = {"text": lambda: TextReport(out, args.rules or "builtin:default"),
                "json": lambda: JsonReport(out), "github": lambda: GithubReport(out)}[args.format]()
    progress = make_progress(args.files)
    replayer = Replayer(guard, args.agent, progress)
    try:
        for record in replayer.run(args.files, args.input_format):
            if isinstance(record, Finding) and record.level == "error":
                print(record.format_text(), file=sys.stderr)
            reporter.add(record)
    finally:
        if progress is not None:
            progress.close()
    reporter.finish()
    if reporter.totals.errors:
        return 2
    if args.fail_on and reporter.totals.worst >= RANK[args.fail_on]:
        return 1
    return 0
