"""What `replay` and `explain` share: the input options and loading the guard they replay with.

Both commands read the same transcripts under the same rules, so an explained decision
is the one `replay` reported; keeping this here lets each command import it without
importing the other.
"""

from __future__ import annotations

import argparse
import sys

from loopguard.cli import add_extends_option
from loopguard.cli.colour import add_color_option
from loopguard.errors import LoopguardError, RulesError
from loopguard.replay.transcripts import FORMATS
from loopguard.session.guard import Guard


def add_common(parser: argparse.ArgumentParser) -> None:
    """Options shared by `replay` and `explain`."""
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="transcript files (JSON or JSONL, also gzipped); - reads standard input",
    )
    parser.add_argument(
        "--rules",
        metavar="R",
        help="rules file or builtin:NAME (default: the bundled builtin:default rules)",
    )
    parser.add_argument(
        "--agent", metavar="A", help="use the per-agent overrides of agent A from the rules"
    )
    parser.add_argument(
        "--input-format", choices=FORMATS, help="skip format detection and read FILEs as this"
    )
    parser.add_argument(
        "--join-sessions",
        action="store_true",
        help="a session id seen in several files is one session (default: sessions are per file)",
    )
    add_extends_option(parser)
    add_color_option(parser)


def load_guard(
    rules: str | None, agent: str | None = None, allow_extends_outside: bool = False
) -> Guard | None:
    """The guard for the given rules file; prints the problems and returns None when it cannot load.

    An `agent` without a block in the rules is a warning on stderr (the replay goes on
    with the global rules), so a mistyped `--agent` is not silently ignored.
    """
    try:
        guard = (
            Guard.from_file(rules, allow_extends_outside=allow_extends_outside)
            if rules
            else Guard.default()
        )
        if guard.unknown_agent(agent, log_it=False):
            print(
                f"{rules or 'builtin:default'}: warning: agent {agent!r} has no block under "
                "agents; it runs with the global rules\n    hint: check the --agent name",
                file=sys.stderr,
            )
        return guard
    except RulesError as exc:
        for finding in exc.findings:
            print(finding.format_text(), file=sys.stderr)
    except (LoopguardError, OSError) as exc:
        print(f"{rules}: error: {exc}", file=sys.stderr)
    return None
