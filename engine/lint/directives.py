"""Ignore comments in rules files: `# loopguard: disable=CODE[,CODE...]` (docs/rules.md).

On a line of its own, `disable=` silences the codes in the whole file; `disable-line=` silences
them on its own line when it ends a line with content, or on the next line when it stands
alone; `all` is every code that can be disabled. JSON5 files write the same after `//`. A
comment that cannot be followed is a `bad-directive` warning (see `CODES`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from loopguard.findings import Finding, codes
from loopguard.text.hints import did_you_mean

_DIRECTIVE = re.compile(
    r"(?:#|//)\s*loopguard:\s*(disable|disable-line)\s*=\s*"
    r"([A-Za-z0-9_,\s-]*?)\s*$"
)
ALL = "all"
# a comment meant as a directive: `loopguard:` (any case; the word after it captured), or
# `loopguard WORD=` without the colon
_MEANT = re.compile(r"(?:#|//)\s*loopguard\s*(?::[ :]*([A-Za-z-]*)|\s+[A-Za-z-]+\s*=)", re.I)
_KINDS = ("disable", "disable-line")
FORMS = (
    "write `# loopguard: disable=CODE[,CODE...]` (on a line of its own: the whole file) or "
    "`# loopguard: disable-line=CODE[,CODE...]` (at the end of a line: that line; alone: the "
    "next line)"
)


CODES = codes(
    """
bad-directive warning directives
    An ignore comment (`# loopguard: disable=...`) naming an unknown code, a load error, or
    nothing, a file-wide `disable=` after content, or a `# loopguard:` comment that is not
    understood (`disable-next-line=`, `disabel=`, no `=`).

    Warns: `# loopguard: disable=unused-sets` (did you mean unused-set?), `# loopguard:
    disable-line CODE` (it silences nothing).
"""
)


@dataclass
class Directives:
    """What one file's comments silence: codes for the whole file and per line."""

    known: Mapping[str, bool]  # each code: whether it can be disabled (a load error cannot)
    file: set[str] = field(default_factory=set)
    lines: dict[int, set[str]] = field(default_factory=dict)
    problems: list[Finding] = field(default_factory=list)

    def silences(self, finding: Finding) -> bool:
        codes = self.file | self.lines.get(finding.line, set())
        return bool(self.known.get(finding.code)) and (finding.code in codes or ALL in codes)


def _problem(name: str, line: int, col: int, message: str, hint: str) -> Finding:
    return Finding(name, line, col, "warning", message, "", hint, "bad-directive")


def read_directives(text: str, name: str, known: Mapping[str, bool]) -> Directives:
    """Parse the ignore comments of `text`; `known` maps each code to whether it can be disabled."""
    found = Directives(known)
    for number, line in enumerate(text.splitlines(), start=1):
        if "loopguard" not in line.lower():
            continue
        match = _DIRECTIVE.search(line)
        if match is None:
            meant = _MEANT.search(line)
            if meant is not None:
                found.problems.append(_not_understood(name, number, line, meant))
            continue
        kind, listed = match.groups()
        codes = {c.strip() for c in listed.split(",") if c.strip()}
        alone = not line[: match.start()].strip()
        problems: list[tuple[str, str]] = []  # (message, hint)
        for code in sorted(c for c in codes if c != ALL and not known.get(c)):
            if code in known:
                message = f"{code!r} cannot be disabled: a file with that error does not load"
                problems.append((message, "fix the error instead"))
            else:
                message = f"unknown lint check {code!r} in an ignore comment"
                hint = "`loopguard lint --list-checks` lists the codes"
                problems.append((message + did_you_mean(code, known), hint))
        if not codes:
            problems.append(("ignore comment names no code", "write disable=CODE[,CODE...]"))
        if kind == "disable" and not alone:
            hint = "put it on a line of its own (whole file), or write disable-line="
            problems.append(("`disable=` after content silences nothing", hint))
        col = match.start() + 1
        found.problems += [_problem(name, number, col, *p) for p in problems]
        if kind == "disable" and alone:
            found.file |= codes
        elif kind == "disable-line":
            found.lines.setdefault(number + 1 if alone else number, set()).update(codes)
    return found


def _not_understood(name: str, number: int, line: str, meant: re.Match[str]) -> Finding:
    """The `bad-directive` warning for a comment that looks like a directive but is not one."""
    text = line[meant.start() :].strip()
    shown = text if len(text) <= 80 else text[:79] + "…"
    word, extra = meant.group(1), ""
    if word is None:
        extra = " (`loopguard` needs a colon after it)"
    elif word in _KINDS:
        extra = f" ({word!r} needs `=` before the codes)"
    elif word:
        extra = did_you_mean(word.lower(), _KINDS)
    message = f"ignore comment not understood, it silences nothing: {shown!r}{extra}"
    return _problem(name, number, meant.start() + 1, message, FORMS)
