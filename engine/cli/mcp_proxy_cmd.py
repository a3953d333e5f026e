"""`loopguard mcp-proxy`: guard the tool calls of any MCP stdio server.

    loopguard mcp-proxy [--rules R] [--agent NAME] -- COMMAND [ARGS...]

Starts COMMAND (the real MCP server) and serves MCP on stdio in its place: everything
passes through unchanged, except that each `tools/call` is decided by the guard first. A
blocked call is answered with a tool result (`isError`, the guard's message) and never
reaches the server. One session per proxy process. Rules: --rules, else $LOOPGUARD_RULES,
else builtin:default. See docs/mcp.md.

Exit codes: 0 the client closed the connection, 1 the server ended it first, 2 the proxy
could not start (the SDK, the rules or the server command).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from loopguard.cli import add_extends_option
from loopguard.cli.replay_inputs import load_guard
from loopguard.cli.rules_errors import report_rules_errors
from loopguard.integrations._core import GuardCore
from loopguard.mcp.calls import CallGuard
from loopguard.mcp.proxy import ProxyError, command_problem, report, sdk_problem, serve

RULES_ENV = "LOOPGUARD_RULES"


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "mcp-proxy",
        help="serve an MCP stdio server through the guard",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--rules",
        metavar="R",
        help=f"rules file or builtin:NAME (default: ${RULES_ENV}, else builtin:default)",
    )
    parser.add_argument(
        "--agent", metavar="NAME", help="use the per-agent overrides of NAME from the rules"
    )
    parser.add_argument(
        "--session-id",
        metavar="ID",
        help="the session's id in logs and decisions (default: mcp-proxy-<process id>)",
    )
    add_extends_option(parser)
    parser.add_argument(
        "server_command",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND [ARGS...]",
        help="the MCP server to start, after --",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    command = list(args.server_command)
    if command[:1] == ["--"]:
        command = command[1:]
    problem = command_problem(command) or sdk_problem()
    if problem is not None:
        report(problem)
        return 2
    rules = args.rules or os.environ.get(RULES_ENV) or None
    guard = load_guard(rules, args.agent, args.allow_extends_outside)
    if guard is None:
        return 2
    report_rules_errors(rules, args.agent, args.allow_extends_outside)  # stderr: not the channel
    session_id = args.session_id or f"mcp-proxy-{os.getpid()}"
    calls = CallGuard(GuardCore(guard, agent=args.agent), session_id, report)
    try:
        serve(command, calls)
    except ProxyError as exc:
        report(str(exc))
        return exc.exit_code
    sys.stderr.flush()
    return 0
