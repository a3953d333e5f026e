"""`loopguard lint --list-checks` and the checks table of docs/rules.md (one renderer for both)."""

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


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def list_markdown() -> str:
    """The table of codes for docs/rules.md, then each meaning check's own documentation."""
    rows = ["| code | level | default | stage | what it reports |", "|---|---|---|---|---|"]
    for c in checks().values():
        rows.append(f"| `{c.code}` | {c.level} | {_state(c)} | {c.stage} | {_cell(c.summary)} |")
    parts = ["\n".join(rows)]
    for c in checks().values():
        body = c.doc.strip().split("\n", 1)
        rest = body[1].strip() if len(body) > 1 else ""
        parts.append(
            f"#### `{c.code}` ({c.level}, {_state(c)})\n\n{body[0].strip()}"
            + (f"\n\n{rest}" if rest else "")
        )
    return "\n\n".join(parts) + "\n"
