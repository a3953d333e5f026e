"""The `loopguard` command: a thin dispatcher over one module per subcommand.

Each subcommand module exposes `add_parser(subparsers)` and `run(args) -> int`.
Exit codes: 0 clean, 1 findings/decisions at the failing level, 2 usage or
unreadable input. Bad input never shows a traceback.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from loopguard.hooks import client as hook_client

if TYPE_CHECKING:
    import argparse

HOOK_DIALECTS = ("claude", "codex", "gemini", "copilot", "cursor")  # loopguard.hooks.dialects
HOOK_ACTIONS = ("install", "uninstall", "status", "-h", "--help")
SUBCOMMANDS = ("lint", "schema", "detectors", "config", "replay", "explain", "hook", "mcp_proxy")


def add_extends_option(parser: argparse.ArgumentParser) -> None:
    """Add --allow-extends-outside, for the commands that load a rules file."""
    parser.add_argument(
        "--allow-extends-outside",
        action="store_true",
        help="let extends: (and store.path) reach files outside the rules file's folder "
        "tree (default: refused; see docs/limits.md)",
    )


def build_parser() -> argparse.ArgumentParser:
    import argparse  # not on the hook's path (main sends `hook DIALECT` straight to it)

    parser = argparse.ArgumentParser(
        prog="loopguard", description="Keep LLM agents out of tool-call loops."
    )
    parser.add_argument("--version", action="version", version=f"loopguard {_version()}")
    sub = parser.add_subparsers(dest="subcommand", metavar="COMMAND")
    for name in SUBCOMMANDS:
        # every subcommand ships with the package: a failing import is a broken install and
        # must surface, not make the subcommand quietly vanish from the CLI
        module = importlib.import_module(f"loopguard.cli.{name}_cmd")
        module.add_parser(sub)
    return parser


def _version() -> str:
    from importlib import metadata  # ~40 ms: only for --version

    try:
        return metadata.version("loopguard-engine")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if len(words) > 1 and words[0] == "hook" and words[1] in HOOK_DIALECTS:
        # an agent runs this around every tool call: straight to the hook, no parser built
        return hook_client.main(words[1:])
    from loopguard.cli.streams import standard_streams
    from loopguard.text.terminal import cli_streams

    with standard_streams(), cli_streams():  # closed streams; never fails to encode; escapes
        return _command(argv, words)


def _command(argv: Sequence[str] | None, words: list[str]) -> int:
    if len(words) > 1 and words[0] == "hook" and words[1] not in HOOK_ACTIONS:
        # a misspelt dialect in an agent's settings: exit 1, never the usage error's 2, which
        # Claude Code, Codex and Gemini CLI read as "block this call"
        print(
            f"loopguard hook: unknown dialect {words[1]!r} (one of {', '.join(HOOK_DIALECTS)}); "
            "the call is allowed",
            file=sys.stderr,
        )
        return 1
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    if not getattr(args, "subcommand", None):
        parser.print_help(sys.stderr)
        return 2
    from loopguard.cli import streams

    try:
        code = int(args.run(args))
        streams.flush_stdout()  # a full disk is reported here, not by the interpreter's exit
        return code
    except KeyboardInterrupt:
        print("loopguard: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # /dev/full, -o /proc/version, a closed stdout: one line, exit 2
        return streams.output_failed(args.subcommand.replace("_", "-"), exc)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
