"""`loopguard lint`: every problem of a rules file, in one run, with file:line:col, code and hint.

Stages: reading (size, encoding), syntax (YAML or JSON5, duplicate keys,
alias bombs), `version`, the assembled JSON Schema, `extends:`, references
(keyword sets, detector ids, regexes), then the meaning checks registered in
`loopguard.lint.checks` (one module per code). Values the schema rejects are
left out before the later stages run, so a schema error never hides a
meaning error elsewhere in the file (an `extends:` layer that cannot be read
does stop the later stages: they would judge an incomplete merge).

Every finding has a code (`lintrules.checks()`); `--disable`/`--enable` and
ignore comments (`lintdirectives`) choose which are reported. Output formats:
`text` (`file:line:col: level[code]: message [path]` and an indented hint
line), `json` (objects with file, line, col, level, message, path, hint,
code) and `github` (workflow commands). Exit codes: 0 clean (warnings
allowed), 1 errors (or warnings with `strict`), 2 usage error or a file that
cannot be read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from loopguard.config.load import Analysis, analyze_builtin, analyze_bytes, analyze_path
from loopguard.config.read import MAX_BYTES
from loopguard.config.schema import Assembly
from loopguard.findings import Finding
from loopguard.lint.cascade import follows_from_rejected
from loopguard.lint.checks import LintContext, checks, registry
from loopguard.lint.directives import Directives, apply, read_directives
from loopguard.text.github import escape_data, escape_property

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


def _agents(agent: str | Sequence[str] | None) -> tuple[str, ...] | None:
    if agent is None:
        return None
    return (agent,) if isinstance(agent, str) else tuple(agent)


def meaning_findings(
    result: Analysis,
    agent: str | Sequence[str] | None = None,
    active: Collection[str] | None = None,
) -> list[Finding]:
    """The registered meaning checks over a loaded (or pruned) analysis.

    A check that raises becomes a `check-failed` finding; the others still run.
    """
    if result.data is None or not result.layers:
        return []
    ctx = LintContext(result.data, tuple(result.layers), _agents(agent))
    found: list[Finding] = []
    for check in registry().meaning():
        if (active is None and not check.default) or (
            active is not None and check.code not in active
        ):
            continue
        try:
            found.extend(check.check(ctx) if check.check else ())
        except Exception as exc:  # noqa: BLE001 - one broken check never hides the others
            found.append(
                Finding(
                    ctx.top_name,
                    1,
                    1,
                    "warning",
                    f"lint check {check.code!r} "
                    f"({check.origin}) failed: {type(exc).__name__}: {exc}",
                    "",
                    "report it to the plugin's authors",
                    "check-failed",
                )
            )
    found = [f for f in found if not follows_from_rejected(f, ctx.removed)]
    found.sort(key=lambda f: (f.file != ctx.top_name, f.file, f.line, f.col))
    return found


def _directives(result: Analysis, text: str | None) -> dict[str, Directives]:
    """The ignore comments of the linted file and of each layer that is a readable file."""
    known = {code: c.can_disable for code, c in checks().items()}
    found: dict[str, Directives] = {}
    names = {layer.name for layer in result.layers} | {result.source}
    for name in names:
        body = text if name == result.source and text is not None else _read(name)
        if body is not None:
            found[name] = read_directives(body, name, known)
    return found


def _read(name: str) -> str | None:
    if name.startswith("builtin:") or not os.path.isfile(name):
        return None
    try:
        if os.path.getsize(name) > MAX_BYTES:
            return None
        with open(name, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def report(
    result: Analysis,
    agent: str | Sequence[str] | None = None,
    active: Collection[str] | None = None,
    text: str | None = None,
) -> FileReport:
    """All findings of an analysis, in one pass, filtered and de-duplicated, the file's own first.

    `active` is the set of codes to report (default: those on by default);
    `text` is the linted file's text when it is not a file on disk (stdin).
    """
    findings = list(result.findings)
    findings.extend(meaning_findings(result, agent, active))
    known = {code: c.can_disable for code, c in checks().items()}
    directives = _directives(result, text)
    for found in directives.values():
        findings.extend(found.problems)
    if active is not None:
        findings = [f for f in findings if f.code in active or not known.get(f.code, False)]
    findings = apply(findings, directives, known)
    unique: list[Finding] = []
    seen: set[Finding] = set()
    for finding in findings:
        if finding not in seen:
            seen.add(finding)
            unique.append(finding)
    unique.sort(key=lambda f: (f.file != result.source, f.file, f.line, f.col))
    return FileReport(result.source, unique, result.unreadable)


def lint_path(
    path: str,
    agent: str | Sequence[str] | None = None,
    assembly: Assembly | None = None,
    active: Collection[str] | None = None,
    allow_extends_outside: bool = False,
) -> FileReport:
    """Lint one file (`builtin:NAME` lints a bundled pack)."""
    if path.startswith("builtin:"):
        return report(analyze_builtin(path, assembly), agent, active)
    return report(analyze_path(path, assembly, allow_extends_outside), agent, active)


def lint_bytes(
    raw: bytes,
    name: str = "<stdin>",
    agent: str | Sequence[str] | None = None,
    assembly: Assembly | None = None,
    active: Collection[str] | None = None,
    allow_extends_outside: bool = False,
) -> FileReport:
    """Lint rules given as bytes (stdin); relative extends resolve from the working directory."""
    text = raw.decode("utf-8", errors="replace")
    return report(
        analyze_bytes(raw, name, None, assembly, allow_extends_outside), agent, active, text
    )


def exit_code(reports: Sequence[FileReport], strict: bool = False) -> int:
    """0 clean, 1 errors (or warnings when strict), 2 a file could not be read."""
    if any(r.unreadable for r in reports):
        return 2
    if any(r.errors for r in reports) or (strict and any(r.warnings for r in reports)):
        return 1
    return 0


def format_text(findings: Sequence[Finding]) -> str:
    return "".join(f.format_text(with_code=True) + "\n" for f in findings)


def format_json(findings: Sequence[Finding]) -> str:
    return json.dumps([f.to_dict() for f in findings], ensure_ascii=False, indent=2) + "\n"


def format_github(findings: Sequence[Finding]) -> str:
    """`::error file=F,line=L,col=C::message [path]` lines (hint on a second line)."""
    lines = []
    for f in findings:
        command = "error" if f.level == "error" else "warning"
        message = f.message + (f" [{f.path}]" if f.path else "")
        if f.hint:
            message += f"\nhint: {f.hint}"
        title = f",title={escape_property(f.code)}" if f.code else ""
        lines.append(
            f"::{command} file={escape_property(f.file)},line={f.line},col={f.col}{title}::"
            f"{escape_data(message)}\n"
        )
    return "".join(lines)


def render(findings: Sequence[Finding], fmt: str) -> str:
    return {"text": format_text, "json": format_json, "github": format_github}[fmt](findings)
