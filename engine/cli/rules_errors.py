"""The lint errors of a rules file that still loads, for every command that runs with it.

Such a file loads (the engine repairs or ignores what lint calls an error, e.g. thresholds
in the wrong order or a warning threshold that can never fire), so without this a command
would run on repaired values and say nothing. Each command prints the errors on stderr,
with `file:line:col`, the code and the hint exactly as `loopguard lint` does, before its own
output; ignore comments (`# loopguard: disable=CODE`) silence them here as in lint.
"""

from __future__ import annotations

import sys
from typing import TextIO

from loopguard.config.layers import BASE, Analysis, analyze
from loopguard.findings import Finding
from loopguard.lint.linter import report


def lint_errors(result: Analysis, agent: str | None = None) -> list[Finding]:
    """The error-level findings `loopguard lint [--agent A]` reports for a loaded analysis."""
    if result.data is None:
        return []
    return [f for f in report(result, agent).findings if f.level == "error"]


def report_rules_errors(
    rules: str | None,
    agent: str | None = None,
    allow_extends_outside: bool = False,
    stream: TextIO | None = None,
) -> int:
    """Print the lint errors of `rules` (None: the bundled default) on stderr; their count.

    Load errors are the loading command's to report; this adds the errors of a file that loads.
    """
    name = rules if rules is not None else BASE
    result = analyze(name, allow_extends_outside=allow_extends_outside)
    if result.errors:
        return 0
    return print_errors(name, lint_errors(result, agent), stream)


def print_errors(name: str, errors: list[Finding], stream: TextIO | None = None) -> int:
    """Each error as lint prints it (`file:line:col: error[code]: …`, hint line), a summary
    line naming the rules file `name`; the count."""
    out = stream if stream is not None else sys.stderr
    for finding in errors:
        print(finding.format_text(with_code=True), file=out)
    if errors:
        count = len(errors)
        print(
            f"loopguard: {name}: {count} lint error{'s' if count != 1 else ''} in the rules "
            f"(see `loopguard lint {name}`); going on with the rules as the engine loads them",
            file=out,
        )
    return len(errors)
