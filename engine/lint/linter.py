"""`loopguard lint`: every problem of a rules file, in one run, with file:line:col, code and hint.

Loading (`config.layers.analyze`) reports its stages' findings, leaving out the values the
schema rejects so that they hide nothing else; then the lint-only checks run, and ignore
comments (`directives`) and the active codes choose what is reported. The registry (`checks()`)
lists every code by stage: the loading stages' (each documented in the `CODES` table of the
module raising it, or by its check module), then the checks plugins register.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from typing import Any

from loopguard.config import json5, layers, schema, source
from loopguard.config.layers import BUILTIN, MAX_BYTES, Analysis, analyze, read_file
from loopguard.config.schema import Assembly
from loopguard.detection.plugins import Registry, registry_or_none
from loopguard.findings import LEVELS, Finding, codes
from loopguard.lint import directives
from loopguard.lint.checks import STAGES, LintCheck, from_module
from loopguard.lint.checks import loopguard_register_lint_checks as builtin_checks
from loopguard.lint.checks.context import LintContext
from loopguard.lint.checks.never_fires import HISTORY_BOUND
from loopguard.lint.directives import Directives, read_directives
from loopguard.text.hints import error_text

CODES = codes(
    """
check-failed warning meaning
    A lint check (usually a plugin's) raised an exception; the others still ran.

    Warns: a plugin check with a bug.
"""
)

# Within a stage, the codes of these `CODES` tables are listed first (in this order), then those
# of the check modules that block loading (in module-name order).
TABLES = (layers, source, schema, json5, directives)
CODE_SHAPE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def _problem(check: Any, taken: dict[str, LintCheck]) -> str | None:
    if not isinstance(check, LintCheck):
        return f"lint check {check!r} is not a loopguard.lint.checks.LintCheck"
    if not CODE_SHAPE.match(check.code):
        return f"lint check code {check.code!r} is not lower-case-with-dashes"
    if check.level not in LEVELS:
        return f"lint check {check.code!r} has level {check.level!r} (error or warning)"
    if not callable(check.check):
        return f"lint check {check.code!r} has no check function"
    if check.code in taken:
        return f"lint check {check.code!r} is already registered by {taken[check.code].origin}"
    return None


@dataclass(frozen=True)
class LintRegistry:
    checks: dict[str, LintCheck]
    problems: tuple[str, ...]


def registry() -> LintRegistry:
    """Stage codes, built-in checks, then plugin checks (built once per plugin registry)."""
    return _build(registry_or_none())


@lru_cache(maxsize=4)
def _build(plugins: Registry | None) -> LintRegistry:
    """The codes loading and lint itself report (no check function of lint runs for them), then
    the checks of each plugin implementing the lint-check hook in load order, then of each
    detector with `lint_checks` of its own; the built-ins are named `loopguard` (without a
    registry, they alone). Keyed by the plugin registry object: a reloaded one gets its own."""
    loading = [
        LintCheck(code, level, doc, None, True, stage)
        for code, level, stage, doc in (*(c for m in TABLES for c in m.CODES), *CODES)
    ]
    loading += [from_module(m) for m in layers.BLOCKING]
    found = {c.code: c for c in sorted(loading, key=lambda c: STAGES.index(c.stage))}
    offers: list[tuple[str, Callable[[], Any]]] = [("loopguard", builtin_checks)]
    if plugins is not None:
        hook = plugins.implementations("loopguard_register_lint_checks")
        offers = [("loopguard" if p.builtin else p.source, f) for p, f in hook]
        offers += [
            ("loopguard" if e.builtin else e.source, partial(tuple, e.detector.lint_checks))
            for e in plugins.entries
            if e.detector.lint_checks
        ]
    problems: list[str] = []
    for origin, function in offers:
        try:
            offered = list(function() or [])
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - one plugin (even sys.exit) never takes lint down
            problems.append(f"{origin}: loopguard_register_lint_checks failed: {error_text(exc)}")
            continue
        for check in offered:
            if origin != "loopguard" and isinstance(check, LintCheck):
                check = replace(check, stage="meaning", origin=origin)
            problem = _problem(check, found)
            if problem:
                problems.append(f"{origin}: {problem}")
            else:
                found[check.code] = check
    return LintRegistry(found, tuple(problems))


def checks() -> dict[str, LintCheck]:
    """Every registered code, in listing order."""
    return registry().checks


# Threshold-like values: where the schema rejected one, an `effective` check would judge the
# default standing in for it (history_size and what never-fires bounds by it, and the doom-loop
# detectors' `bounded_by` options).
NUMBERS = {"history_size", *(name for name, _ in HISTORY_BOUND), "window", "threshold"}


def _within(block: str, gone: str) -> bool:
    """Is `block` the block `gone`, inside it, or an agent's copy of a global `gone`?"""
    if block == gone or block.startswith(gone + "."):
        return True
    return not gone.startswith("agents.") and (block.endswith("." + gone) or f".{gone}." in block)


def follows_from_rejected(finding: Finding, removed: set[str]) -> bool:
    """A finding of an `effective` check about a block where the schema rejected a value: the
    merged rules hold the default in its place, a value the user never chose."""
    block = finding.path.rpartition(".")[0]
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


def meaning_findings(
    result: Analysis,
    agent: str | Sequence[str] | None = None,
    active: Collection[str] | None = None,
) -> list[Finding]:
    """The registered lint-only checks over a loaded (or pruned) analysis; a check that raises
    is a `check-failed` finding, and the others still run."""
    if result.data is None or not result.layers:
        return []
    agents = (agent,) if isinstance(agent, str) else None if agent is None else tuple(agent)
    ctx = LintContext(result.data, tuple(result.layers), agents)
    top = result.layers[-1].name
    found: list[Finding] = []
    registered = registry().checks.values()
    effective = {check.code for check in registered if check.effective}
    for check in registered:
        if check.check is None or not (check.default if active is None else check.code in active):
            continue
        try:
            found += list(check.check(ctx))
        except Exception as exc:  # noqa: BLE001 - one broken check never hides the others
            message = f"lint check {check.code!r} ({check.origin}) failed: {error_text(exc)}"
            hint = "report it to the plugin's authors"
            found.append(Finding(top, 1, 1, "warning", message, "", hint, "check-failed"))
    # dotted paths (`loop_detection.history_size`) of values the schema rejected
    removed = {".".join(map(str, p)) for doc in result.layers for p in doc.removed}
    found = [f for f in found if f.code not in effective or not follows_from_rejected(f, removed)]
    found.sort(key=lambda f: (f.file != top, f.file, f.line, f.col))
    return found


def report(
    result: Analysis,
    agent: str | Sequence[str] | None = None,
    active: Collection[str] | None = None,
    text: str | None = None,
) -> FileReport:
    """All findings of an analysis, in one pass, filtered and de-duplicated, the file's own first:
    `active` holds the codes to report (default: those on by default), `text` the file's text
    when it is not on disk (stdin); ignore comments are read from it and every readable layer."""
    findings = [*result.findings, *meaning_findings(result, agent, active)]
    known = {code: c.can_disable for code, c in checks().items()}
    found: dict[str, Directives] = {}
    for name in {layer.name for layer in result.layers} | {result.source}:
        body = text if name == result.source else None
        if body is None and not name.startswith(BUILTIN):  # a bundled pack is no file
            raw = read_file(name)[0]
            body = raw.decode(errors="replace") if raw and len(raw) <= MAX_BYTES else None
        if body is not None:
            found[name] = read_directives(body, name, known)
            findings.extend(found[name].problems)
    if active is not None:
        findings = [f for f in findings if f.code in active or not known.get(f.code, False)]
    kept = [f for f in findings if f.file not in found or not found[f.file].silences(f)]
    unique = list(dict.fromkeys(kept))
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
    result = analyze(raw, "bytes", name, None, assembly, allow_extends_outside)
    return report(result, agent, active, raw.decode("utf-8", errors="replace"))
