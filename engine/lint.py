"""`loopguard lint`: every problem of a rules file, with file:line:col and a fix hint.

Stages, each reported in full: reading (size, encoding), syntax (YAML or
JSON5, duplicate keys, alias bombs), `version`, the assembled JSON Schema,
`extends:`, references (keyword sets, detector ids, regexes), and the checks
of `lintchecks`, `thresholdchecks` and `gatechecks`. Meaning checks run only once a file
loads without errors (they read a well-typed document).

Output formats: `text` (`file:line:col: level: message [path]` and an
indented hint line), `json` (a list of objects with file, line, col, level,
message, path, hint, code) and `github` (workflow commands that annotate a
pull request). Exit codes: 0 clean (warnings allowed), 1 errors (or warnings
with `strict`), 2 usage error or a file that cannot be read.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from .findings import Finding
from .gatechecks import gate_checks
from .lintchecks import hygiene_checks
from .rulesfile import Analysis, analyze_builtin, analyze_bytes, analyze_path
from .schema import Assembly
from .thresholdchecks import merged_checks, order_errors

FORMATS = ("text", "json", "github")


@dataclass
class FileReport:
    """The findings of one linted file."""

    name: str
    findings: list[Finding] = field(default_factory=list)
    unreadable: bool = False

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.level == "error")

    @property
    def warnings(self) -> int:
        return sum(1 for f in self.findings if f.level != "error")


def meaning_findings(result: Analysis, agent: str | None = None) -> list[Finding]:
    """Lint-only checks over a loaded (error-free) analysis."""
    if result.data is None or not result.layers:
        return []
    data, top, index = result.data, result.layers[-1], result.index
    found, erred = order_errors(data, top.data, index)
    found.extend(merged_checks(data, top.name, index, erred, agent))
    found.extend(hygiene_checks(data, top.data, index))
    found.extend(gate_checks(data, top.data, index))
    agents = data.get("agents") or {}
    if agent is not None and agent not in agents:
        found.append(index.finding(data, ("agents",), "warning",
                                   f"agent {agent!r} has no block under agents; it runs with "
                                   "the global settings", "check the --agent name",
                                   "unknown-agent"))
    return found


def report(result: Analysis, agent: str | None = None) -> FileReport:
    """All findings of an analysis, de-duplicated, the linted file's own first."""
    findings = list(result.findings)
    if not result.errors:
        findings.extend(meaning_findings(result, agent))
    unique: list[Finding] = []
    seen: set[Finding] = set()
    for finding in findings:
        if finding not in seen:
            seen.add(finding)
            unique.append(finding)
    unique.sort(key=lambda f: (f.file != result.source, f.file, f.line, f.col))
    return FileReport(result.source, unique, result.unreadable)


def lint_path(path: str, agent: str | None = None, assembly: Assembly | None = None
              ) -> FileReport:
    """Lint one file (`builtin:NAME` lints a bundled pack)."""
    if path.startswith("builtin:"):
        return report(analyze_builtin(path, assembly), agent)
    return report(analyze_path(path, assembly), agent)


def lint_bytes(raw: bytes, name: str = "<stdin>", agent: str | None = None,
               assembly: Assembly | None = None) -> FileReport:
    """Lint rules given as bytes (stdin); relative extends resolve from the working directory."""
    return report(analyze_bytes(raw, name, None, assembly), agent)


def exit_code(reports: Sequence[FileReport], strict: bool = False) -> int:
    """0 clean, 1 errors (or warnings when strict), 2 a file could not be read."""
    if any(r.unreadable for r in reports):
        return 2
    if any(r.errors for r in reports) or (strict and any(r.warnings for r in reports)):
        return 1
    return 0


def format_text(findings: Sequence[Finding]) -> str:
    return "".join(f.format_text() + "\n" for f in findings)


def format_json(findings: Sequence[Finding]) -> str:
    return json.dumps([f.to_dict() for f in findings], ensure_ascii=False, indent=2) + "\n"


def _escape(text: str, in_property: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if in_property:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def format_github(findings: Sequence[Finding]) -> str:
    """`::error file=F,line=L,col=C::message [path]` lines (hint on a second line)."""
    lines = []
    for f in findings:
        command = "error" if f.level == "error" else "warning"
        message = f.message + (f" [{f.path}]" if f.path else "")
        if f.hint:
            message += f"\nhint: {f.hint}"
        lines.append(f"::{command} file={_escape(f.file, True)},line={f.line},col={f.col}::"
                     f"{_escape(message)}\n")
    return "".join(lines)


def render(findings: Sequence[Finding], fmt: str) -> str:
    return {"text": format_text, "json": format_json, "github": format_github}[fmt](findings)
