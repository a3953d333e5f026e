"""A detector's effective options in every scope lint judges, and where to report on them.

A detector's own lint check (`Detector.lint_checks`) and the engine's checks of
declared option relations (`Detector.bounded_by`) both ask: in the global scope
and each agent's (only the `--agent` ones when given), what options does this
detector run with after merging, and where was a value written? Reporting at the
linted file's own spelling first, else wherever a layer wrote it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from loopguard.config.effective import effective_config
from loopguard.config.loadchecks import scopes
from loopguard.config.positions import Path, PositionIndex
from loopguard.findings import Finding
from loopguard.lint.checks.context import LintContext


@dataclass(frozen=True)
class OptionScope:
    """One scope's effective options of one detector."""

    prefix: Path  # () for the global scope, ("agents", NAME) for an agent's
    detector: str
    options: dict[str, Any]
    config: dict[str, Any]  # the scope's whole effective rules (for shared settings)
    who: str  # "" or " for agent 'NAME'", for messages

    def path(self, *keys: str | int) -> Path:
        """The path of an option of this detector inside this scope."""
        return self.prefix + ("detectors", self.detector, *keys)


def checked_scopes(data: dict[str, Any], agents: tuple[str, ...] | None) -> list[Path]:
    """The scopes whose effective settings lint judges: all, or the global one and `agents`'."""
    every = [p for p, _ in scopes(data)]
    if agents is None:
        return every
    return [()] + [("agents", a) for a in agents if ("agents", a) in every]


def option_scopes(ctx: LintContext, detector: str) -> Iterator[OptionScope]:
    """The detector's effective options in each judged scope (the merged document's)."""
    for prefix in checked_scopes(ctx.data, ctx.agents):
        name = prefix[1] if prefix else None
        config, _ = effective_config(ctx.data, str(name) if name is not None else None)
        options = (config.get("detectors") or {}).get(detector)
        yield OptionScope(
            prefix,
            detector,
            options if isinstance(options, dict) else {},
            config,
            f" for agent {name!r}" if name is not None else "",
        )


def place(index: PositionIndex, top_name: str, candidates: Sequence[Path]) -> Path:
    """The first candidate the linted file (`top_name`) wrote, else the first any layer wrote,
    else the first."""
    for path in candidates:
        layer = index.owner(path)
        if layer is not None and layer.name == top_name:
            return path
    for path in candidates:
        if index.owner(path) is not None:
            return path
    return candidates[0]


def option_finding(
    ctx: LintContext,
    scope: OptionScope,
    options: Sequence[str],
    level: str,
    message: str,
    hint: str,
    code: str,
) -> Finding:
    """A finding about `options` of a scope, placed at the first of them that was written."""
    candidates = [scope.path(o) for o in options] + [
        ("detectors", scope.detector, o) for o in options
    ]
    return ctx.finding(place(ctx.index, ctx.top_name, candidates), level, message, hint, code)
