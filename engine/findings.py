"""The one record for "something is wrong in a rules file or an input file".

Lint, the rules loader and the transcript readers all report problems as
`Finding`s, so every error a user sees names the file, line and column, the
path inside the document, and a one-line hint.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

LEVELS = ("error", "warning")


@dataclass(frozen=True)
class Finding:
    """One problem: where it is, how bad it is, what it is and how to fix it."""

    file: str
    line: int  # 1-based; 0 when the position is unknown
    col: int  # 1-based; 0 when the position is unknown
    level: str  # "error" or "warning"
    message: str
    path: str = ""  # breadcrumb inside the document, e.g. "detectors.doom_loop_exact.window"
    hint: str = ""
    code: str = ""  # short stable id, e.g. "unknown-key"

    def format_text(self, with_code: bool = False) -> str:
        """`file:line:col: level: message [path]` plus the hint on the next line.

        `with_code` (lint's output) writes the level as `error[unknown-key]`.
        """
        where = f"{self.file}:{self.line}:{self.col}"
        level = f"{self.level}[{self.code}]" if with_code and self.code else self.level
        text = f"{where}: {level}: {self.message}"
        if self.path:
            text += f" [{self.path}]"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def codes(table: str) -> tuple[tuple[str, str, str, str], ...]:
    """Parse a module's table of the finding codes it raises into (code, level, stage, doc).

    The table is a text block: a line `code level stage` starts an entry, the
    indented lines under it are its documentation (blank lines part paragraphs).
    `lint --list-checks` and docs/rules.md print the entries in table order.
    """
    entries: list[list[str]] = []
    for line in table.strip("\n").splitlines():
        if line and not line[0].isspace():
            code, level, stage = line.split()
            entries.append([code, level, stage, ""])
        else:
            entries[-1][3] += line.strip() + "\n"
    return tuple(
        (code, level, stage, "\n\n".join(" ".join(p.split()) for p in doc.split("\n\n")).strip())
        for code, level, stage, doc in entries
    )
