"""The registry of lint checks: every code lint can report, with its level and documentation.

Two kinds of entries share one registry (`checks()`):

- *meaning checks*: one module each under `loopguard.lint.checks` (listed in
  `BUILTIN_CHECKS`, no directory scanning), with `CODE`, `LEVEL`, `DEFAULT`
  (on unless `False`) and a pure `check(ctx: LintContext) -> list[Finding]`;
  the module docstring is the documentation. Plugins add more through the
  `loopguard_register_lint_checks` hook; built-ins come through the very same
  hook (`builtin.py`).
- *stage codes*: what reading, the schema, `extends:` and the reference checks
  report (`stagecodes.py`). Their errors stop a file from loading, so they
  cannot be disabled; their warnings can.

`select()` turns `--disable`/`--enable` into the set of active codes. The `LintCheck`
record lives in `record.py` and the built-ins' list in `builtin.py`, so the modules this
registry collects never import it back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

from loopguard.detection.plugins import load_registry
from loopguard.findings import LEVELS
from loopguard.lint.checks import builtin
from loopguard.lint.checks.builtin import BUILTIN_CHECKS
from loopguard.lint.checks.context import LintContext
from loopguard.lint.checks.record import LintCheck, from_module
from loopguard.lint.checks.stagecodes import LINT_CODES, STAGE_CODES

CODE_SHAPE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


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
        return [("loopguard", builtin.loopguard_register_lint_checks)]
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
    found: dict[str, LintCheck] = {c.code: c for c in (*STAGE_CODES, *LINT_CODES)}
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
                check = LintCheck(
                    check.code,
                    check.level,
                    check.doc,
                    check.check,
                    check.default,
                    "meaning",
                    origin,
                )
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


__all__ = [
    "BUILTIN_CHECKS",
    "LintCheck",
    "LintContext",
    "LintRegistry",
    "SelectionError",
    "checks",
    "from_module",
    "registry",
    "select",
]
