"""`loopguard hook`: loopguard as the command a coding agent runs around every tool call.

  loopguard hook DIALECT           read one event on stdin, print the answer (agents run this)
  loopguard hook install DIALECT   add the hook to the agent's settings file
  loopguard hook uninstall DIALECT remove it again
  loopguard hook status [SESSION]  what the hook saw and decided, and why

DIALECT is claude (also VS Code agent mode and Cursor through .claude/settings.json),
codex, gemini, copilot or cursor. See docs/hooks.md.
"""

from __future__ import annotations

import argparse
from typing import Any

from loopguard.hooks import install, runner, status
from loopguard.hooks.dialects import DIALECTS


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "hook",
        help="run as a coding agent's hook, install it, or show what it decided",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="hook_action", metavar="ACTION")
    for name, dialect in DIALECTS.items():
        one = actions.add_parser(name, help=f"answer one {dialect.title} hook event (stdin)")
        one.add_argument("--rules", help="rules file or builtin:NAME (see docs/hooks.md)")
        one.add_argument("--agent", help="the rules' agent block to use")
        one.add_argument("--event", help="the event's name, for payloads that do not carry it")
        one.set_defaults(run=_run_event, dialect=name)
    install.add_install_arguments(
        actions.add_parser("install", help="add loopguard's hook to an agent's settings")
    )
    install.add_uninstall_arguments(
        actions.add_parser("uninstall", help="remove loopguard's hook from an agent's settings")
    )
    status.add_status_arguments(
        actions.add_parser("status", help="what the hook saw and decided for a session")
    )
    parser.set_defaults(run=lambda args: _help(parser))


def _run_event(args: argparse.Namespace) -> int:
    """Reached only through the parser (the CLI sends `hook DIALECT` straight to the runner)."""
    words = [args.dialect]
    for flag in ("rules", "agent", "event"):
        if getattr(args, flag):
            words += [f"--{flag}", getattr(args, flag)]
    return runner.main(words)


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2
