"""`loopguard lint --list-checks`: every code of the lint registry, as text or JSON."""

from __future__ import annotations

import json

from loopguard.lint.checks import LintCheck
from loopguard.lint.linter import checks


def _state(check: LintCheck) -> str:
    if not check.can_disable:
        return "always"
    return "on" if check.default else "off"


def list_text() -> str:
    """One line per code: code, level, on/off/always, stage, summary."""
    rows = [(c.code, c.level, _state(c), c.stage, c.summary) for c in checks().values()]
    width = max(len(r[0]) for r in rows)
    lines = [
        f"{code:<{width}}  {level:<7}  {state:<6}  {stage:<10}  {summary}"
        for code, level, state, stage, summary in rows
    ]
    legend = (
        "\non: reported by default (--disable CODE turns it off); off: only with --enable "
        "CODE; always: an error that stops loading, cannot be disabled\n"
    )
    return "\n".join(lines) + "\n" + legend


def list_json() -> str:
    """The registry as JSON: one object per code (for tools and editor integrations)."""
    rows = [
        {
            "code": c.code,
            "level": c.level,
            "default": _state(c),
            "stage": c.stage,
            "summary": c.summary,
            "origin": c.origin,
            "doc": c.doc.strip(),
        }
        for c in checks().values()
    ]
    return json.dumps(rows, indent=2, ensure_ascii=False) + "\n"
