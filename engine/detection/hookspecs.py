"""pluggy hook specifications of loopguard (project name "loopguard").

A plugin is a module or object named by an entry point in the group
`loopguard.detectors`; it implements any of these with `@loopguard.hookimpl`.
Detectors are handed over once, at registration; the engine calls them
directly on every tool call (a pluggy call per tool call would cost more).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from loopguard.decision import Decision
    from loopguard.detection.detector import Detector
    from loopguard.lint.checks import LintCheck

PROJECT = "loopguard"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def loopguard_register_detectors() -> list[Detector]:  # type: ignore[empty-body]
    """Return the detector objects this plugin provides."""


@hookspec
def loopguard_on_decision(session_id: str, decision: Decision, rules_source: str) -> None:
    """Called with every non-allow decision (for logging or metrics), the detectors' and
    those a host reports through `Session.report` (the runtime's round cap).

    `rules_source` names the rules the Guard loaded (a path as given, `builtin:NAME`, or
    `<mapping>`). An implementation takes only the arguments it names.
    """


@hookspec
def loopguard_register_lint_checks() -> list[LintCheck]:  # type: ignore[empty-body]
    """Return `loopguard.lint.checks.LintCheck` records: extra `loopguard lint` checks.

    See docs/plugins.md; the built-in checks come through this hook too.
    """
