"""ANSI colour for the text output of `lint`, `replay`, `explain`, `config` and `detectors`.

`--color auto` (the default) colours only a terminal and not when the
`NO_COLOR` environment variable is set to anything non-empty (no-color.org);
`always` and `never` override both. Colour is painted onto finished lines, so
the plain text (golden outputs, pipes, files) stays byte for byte the same.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable
from typing import Any

CHOICES = ("auto", "always", "never")
RESET = "\033[0m"
BOLD, DIM, RED, GREEN, YELLOW, MAGENTA, CYAN = (
    "\033[1m",
    "\033[2m",
    "\033[31m",
    "\033[32m",
    "\033[33m",
    "\033[35m",
    "\033[36m",
)
LEVELS = {"error": BOLD + RED, "warning": BOLD + YELLOW}
ACTIONS = {
    "WARN": YELLOW,
    "CRITICAL": BOLD + RED,
    "BREAKER": BOLD + MAGENTA,
    "SKIPPED REQUIRED TOOL": BOLD + YELLOW,
    "ALLOW": GREEN,
}

_FINDING = re.compile(r"^(.+?:\d+:\d+): (error|warning)(\[[a-z0-9-]+\])?: ")
_HINT = re.compile(r"^(\s+)(hint:)")
_ACTION = re.compile(r"(?<![\w-])(SKIPPED REQUIRED TOOL|WARN|CRITICAL|BREAKER|ALLOW)(?![\w-])")
_HEADING = re.compile(
    r"^(session |decision #|votes:|history at that moment|thresholds involved|"
    r"summary:|input warnings|loopguard replay )"
)


def add_color_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--color",
        choices=CHOICES,
        default="auto",
        help="colour the text output: auto (a terminal, unless NO_COLOR is set), always or never",
    )


def wanted(choice: str | None, stream: Any) -> bool:
    """Whether to colour text written to `stream` under `--color choice`."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # a closed or unusual stream
        return False


def _wrap(code: str, text: str) -> str:
    return f"{code}{text}{RESET}"


def paint_finding(line: str) -> str:
    """A lint line: bold position, red `error` / yellow `warning`, cyan `hint:`."""
    match = _FINDING.match(line)
    if match:
        where, level, code = match.groups()
        shown = _wrap(LEVELS[level], level) + (_wrap(DIM, code) if code else "")
        return f"{_wrap(BOLD, where)}: {shown}: {line[match.end() :]}"
    return _HINT.sub(lambda m: m.group(1) + _wrap(CYAN, m.group(2)), line, count=1)


def paint_report(line: str) -> str:
    """A replay or explain line: actions in their colour, headings bold, findings as in lint."""
    if _FINDING.match(line) or _HINT.match(line):
        return paint_finding(line)
    if _HEADING.match(line):
        line = _wrap(BOLD, line)
    return _ACTION.sub(lambda m: _wrap(ACTIONS[m.group(1)], m.group(1)), line)


_PROVENANCE = re.compile(r"^(\s*)([^\s#][^:]*:)(.*?)(\s+# (?:from|repaired) .*)?$")
_STATUS = re.compile(r"^(\s+\S+\s+)(on|off)( .*?)(\s+# switch from .*)?$")
_LISTED = re.compile(r"^(\S+)(\s+\((?:built-in|plugin): .*\))$")


def paint_config(line: str) -> str:
    """`loopguard config`: the header bold, keys cyan, `# from` dim, `# repaired` yellow."""
    if line.startswith("#"):
        return _wrap(BOLD, line)
    match = _PROVENANCE.match(line)
    if not match:
        return line
    indent, key, value, note = match.groups()
    shown = f"{indent}{_wrap(CYAN, key)}{value}"
    if note:
        shown += _wrap(YELLOW if "# repaired" in note else DIM, note)
    return shown


def paint_detectors(line: str) -> str:
    """`loopguard detectors`: ids bold, `on` green, `off` red, sources dim, faults red."""
    status = _STATUS.match(line)
    if status:
        lead, state, why, where = status.groups()
        return (
            lead
            + _wrap(GREEN if state == "on" else RED, state)
            + why
            + (_wrap(DIM, where) if where else "")
        )
    listed = _LISTED.match(line)
    if listed:
        return _wrap(BOLD, listed.group(1)) + _wrap(DIM, listed.group(2))
    if line.startswith(("detectors of ", "faults:")) or re.match(
        r"^\d+ of \d+ detectors on$", line
    ):
        return _wrap(BOLD + RED if line == "faults:" else BOLD, line)
    return line


class Painter:
    """A text stream wrapper that paints each finished line before writing it on."""

    def __init__(self, out: Any, paint: Callable[[str], str]) -> None:
        self.out = out
        self.paint = paint
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            self.out.write(self.paint(line) + "\n")
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self.out.write(self.paint(self._pending))
            self._pending = ""
        self.out.flush()


def painted(out: Any, choice: str | None, paint: Callable[[str], str]) -> Any:
    """`out` itself, or a `Painter` over it when colour is wanted (call `flush` at the end)."""
    return Painter(out, paint) if wanted(choice, out) else out
