"""`loopguard lint`: every problem of a rules file, in one run, with file:line:col, code and hint.

Stages: reading (size, encoding), syntax (YAML or JSON5, duplicate keys,
alias bombs), `version`, the assembled JSON Schema, `extends:`, the checks
that block loading (keyword sets, detector ids, regexes, templates), then the
lint-only checks (`loopguard.lint.checks`, one module per code). Values the
schema rejects are left out before the later stages run, so a schema error
never hides a lint error elsewhere in the file (an `extends:` layer that
cannot be read does stop the later stages: they would judge an incomplete merge).

Every code is in the registry (`checks()`): the loading stages' codes, each
documented in the module that raises it (its `CODES`), then the checks plugins
register (the built-ins through the same hook). `--disable`/`--enable` and
ignore comments (`directives`) choose which are reported. Output formats:
`text` (`file:line:col: level[code]: message [path]` and an indented hint
line), `json` (objects with file, line, col, level, message, path, hint,
code) and `github` (workflow commands). Exit codes: 0 clean (warnings
allowed), 1 errors (or warnings with `strict`), 2 usage error or a file that
cannot be read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from typing import Any

from loopguard.config import json5, layers, schema, source
from loopguard.config.layers import BLOCKING, MAX_BYTES, Analysis, analyze
from loopguard.config.schema import Assembly
from loopguard.detection.plugins import load_registry
from loopguard.findings import LEVELS, Finding, codes
from loopguard.lint import directives
from loopguard.lint.checks import LintCheck, from_module, loopguard_register_lint_checks
from loopguard.lint.checks.context import LintContext
from loopguard.lint.directives import Directives, apply, read_directives
from loopguard.text.github import escape_data, escape_property

FORMATS = ("text", "json", "github")


# The codes raised here: `code level stage` and what it means, as `lint --list-checks`
# and docs/rules.md document them
CODES = codes(
    """
check-failed warning meaning
    A lint check (usually a plugin's) raised an exception; the others still ran.

    Warns: a plugin check with a bug.
"""
)


# The order `lint --list-checks` and docs/rules.md list the loading stages' codes in.
LISTED = (
    "unreadable",
    "too-large",
    "encoding",
    "binary",
    "yaml-syntax",
    "json5-syntax",
    "multiple-documents",
    "duplicate-key",
    "key-type",
    "yaml-tag",
    "yaml-alias",
    "yaml-merge",
    "alias-bomb",
    "too-deep",
    "empty",
    "not-a-mapping",
    "version",
    "unknown-key",
    "unknown-detector",
    "required",
    "type",
    "range",
    "enum",
    "condition",
    "too-long",
    "pattern",
    "schema",
    "bad-regex",
    "regex-too-complex",
    "template",
    "cycle",
    "undefined-set",
    "extends",
    "extends-cycle",
    "store-path",
    "openclaw-agent",
    "duplicate-agent",
    "openclaw-ignored",
    "openclaw-conflict",
    "bad-directive",
    "check-failed",
)
CODE_SHAPE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def _stage_codes() -> dict[str, LintCheck]:
    """The codes loading and lint itself report (no check function runs for them), in
    `LISTED` order."""
    tables = (layers, source, json5, schema, directives)
    found = {
        code: LintCheck(code, level, doc, None, True, stage)
        for module in tables
        for code, level, stage, doc in module.CODES
    }
    found.update((c[0], LintCheck(c[0], c[1], c[3], None, True, c[2])) for c in CODES)
    found.update((m.CODE, from_module(m)) for m in BLOCKING)
    if set(found) != set(LISTED):
        raise RuntimeError(f"LISTED and the CODES tables differ: {set(found) ^ set(LISTED)}")
    return {code: found[code] for code in LISTED}


def _problem(check: Any, origin: str, taken: dict[str, LintCheck]) -> str | None:
    if not isinstance(check, LintCheck):
        return f"{origin}: lint check {check!r} is not a loopguard.lint.checks.LintCheck"
    if not CODE_SHAPE.match(check.code):
        return f"{origin}: lint check code {check.code!r} is not lower-case-with-dashes"
    if check.level not in LEVELS:
        return f"{origin}: lint check {check.code!r} has level {check.level!r} (error or warning)"
    if not callable(check.check):
        return f"{origin}: lint check {check.code!r} has no check function"
    if check.code in taken:
        owner = taken[check.code].origin
        return f"{origin}: lint check {check.code!r} is already registered by {owner}"
    return None


@dataclass(frozen=True)
class LintRegistry:
    checks: dict[str, LintCheck]
    problems: tuple[str, ...]

    def meaning(self) -> list[LintCheck]:
        return [c for c in self.checks.values() if c.check is not None]


def _plugin_registry() -> Any:
    try:
        return load_registry()
    except Exception:  # noqa: BLE001 - a broken plugin setup must not break lint
        return None


def _plugin_impls(plugins: Any) -> list[tuple[str, Callable[[], Any]]]:
    """(origin, hook function) of every plugin implementing the lint-check hook, in load order.

    The built-in checks are a plugin like any other (`loopguard-engine[lint_checks]`,
    found and loaded by the detector registry); they are named `loopguard`. Without a
    registry, the built-ins alone.
    """
    if plugins is None:
        return [("loopguard", loopguard_register_lint_checks)]
    hooks = [
        ("loopguard" if plugin.builtin else plugin.source, function)
        for plugin, function in plugins.implementations("loopguard_register_lint_checks")
    ]
    return hooks + _detector_checks(plugins)


def _detector_checks(plugins: Any) -> list[tuple[str, Callable[[], Any]]]:
    """(origin, function) offering each registered detector's own `lint_checks`, after the
    hooks: a detector's checks are listed, run and disabled like every other check."""
    return [
        (
            "loopguard" if entry.builtin else entry.source,
            partial(tuple, entry.detector.lint_checks),
        )
        for entry in plugins.entries
        if entry.detector.lint_checks
    ]


def registry() -> LintRegistry:
    """Stage codes, built-in checks, then plugin checks (built once per plugin registry)."""
    return _build(_plugin_registry())


@lru_cache(maxsize=4)
def _build(plugins: Any) -> LintRegistry:
    """Keyed by the plugin registry object, so a reloaded registry gets its own checks."""
    found = _stage_codes()
    problems: list[str] = []
    for origin, function in _plugin_impls(plugins):
        try:
            offered = list(function() or [])
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - one plugin (even sys.exit) never takes lint down
            problems.append(
                f"{origin}: loopguard_register_lint_checks failed: {type(exc).__name__}: {exc}"
            )
            continue
        for check in offered:
            if origin != "loopguard" and isinstance(check, LintCheck):
                check = replace(check, stage="meaning", origin=origin)
            problem = _problem(check, origin, found)
            if problem:
                problems.append(problem)
            else:
                found[check.code] = check
    return LintRegistry(found, tuple(problems))


def checks() -> dict[str, LintCheck]:
    """Every registered code, stage codes first."""
    return registry().checks


class SelectionError(ValueError):
    """`--disable`/`--enable` named an unknown code or one that cannot be turned off."""


def select(disable: Sequence[str] = (), enable: Sequence[str] = ()) -> frozenset[str]:
    """The active codes: the defaults, plus `enable`, minus `disable`."""
    known = checks()
    for code in (*disable, *enable):
        if code not in known:
            raise SelectionError(
                f"unknown lint check {code!r}; `loopguard lint --list-checks` lists them"
            )
    for code in disable:
        if not known[code].can_disable:
            raise SelectionError(
                f"{code!r} cannot be disabled: a file with that error does not load"
            )
    both = sorted(set(disable) & set(enable))
    if both:
        raise SelectionError(f"{', '.join(both)}: both --disable and --enable")
    active = {code for code, c in known.items() if c.default} | set(enable)
    return frozenset(active - set(disable))


# Threshold-like values: where the schema rejected one, an `effective` check would judge the
# default standing in for it.
NUMBERS = {
    "history_size",
    "warning_threshold",
    "critical_threshold",
    "unknown_tool_threshold",
    "global_circuit_breaker_threshold",
    "window",
    "threshold",
}


def _within(block: str, gone: str) -> bool:
    """Is `block` the block `gone`, inside it, or an agent's copy of a global `gone`?"""
    if block == gone or block.startswith(gone + "."):
        return True
    return not gone.startswith("agents.") and (block.endswith("." + gone) or f".{gone}." in block)


def follows_from_rejected(finding: Finding, removed: set[str]) -> bool:
    """A finding of an `effective` check (one that judges merged values) about a block where
    the schema rejected a value: the merged rules hold the default in its place, a value the
    user never chose, and the schema error is the one finding to show."""
    block = finding.path.rsplit(".", 1)[0] if "." in finding.path else ""
    for gone in removed:
        parent, _, name = gone.rpartition(".")
        if _within(block, gone) or (name in NUMBERS and _within(block, parent)):
            return True
    return False


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
    effective = set()
    for check in registry().meaning():
        if (active is None and not check.default) or (
            active is not None and check.code not in active
        ):
            continue
        if check.effective:
            effective.add(check.code)
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
    found = [
        f for f in found if f.code not in effective or not follows_from_rejected(f, ctx.removed)
    ]
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
    result = analyze(path, assembly=assembly, allow_extends_outside=allow_extends_outside)
    return report(result, agent, active)


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
        analyze(raw, "bytes", name, None, assembly, allow_extends_outside), agent, active, text
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
