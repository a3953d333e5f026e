"""An effective rules dict compiled into what runs on every call.

A `CompiledPolicy` is immutable and shared by every session of one agent: the
ordered detector pipeline (gated by `loop_detection.enabled` and each
detector's switch, see `is_active`), the aggregator, outcome normalisation and the turn policy.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from loopguard.detection import sandbox
from loopguard.detection.aggregator import Aggregator
from loopguard.detection.detector import ROLLING, UNLESS_DISABLED, Detector
from loopguard.detection.marks import UnknownTools
from loopguard.detection.plugins import Registry
from loopguard.detection.sandbox import Budget
from loopguard.policy.outcomes import OutcomeReader
from loopguard.policy.turns import TurnPolicy
from loopguard.rules import default
from loopguard.text.hints import error_text


@dataclass(frozen=True)
class Stage:
    """One detector in the pipeline with its compiled options."""

    detector: Detector
    cfg: Any
    source: str
    trusted: bool  # a built-in detector: its votes skip the per-vote contract check
    budget: Budget  # a plugin's time record (its hooks run behind the sandbox)


Hook = tuple[Any, Any, Stage]  # (bound method, compiled options, stage)


def _hooks(stages: list[Stage], name: str) -> tuple[Hook, ...]:
    """Bound `name` methods of the stages that implement it (base no-ops are skipped)."""
    found = []
    for stage in stages:
        method = getattr(stage.detector, name)
        if getattr(type(stage.detector), name, None) is getattr(Detector, name):
            continue
        if not stage.trusted:  # plugin code: read-only views, vote checks, a time budget
            method = sandbox.wrap(name, method, stage.detector.id, stage.budget)
        found.append((method, stage.cfg, stage))
    return tuple(found)


@dataclass(frozen=True)
class CompiledPolicy:
    config: Mapping[str, Any]
    stages: tuple[Stage, ...]
    checks: tuple[Hook, ...]
    repeat_checks: tuple[Hook, ...]  # checks of `repeats_only` detectors: only for recent calls
    seen_checks: tuple[Hook, ...]  # checks + repeat_checks: the pipeline for a call seen lately
    afters: tuple[Hook, ...]
    compaction_hooks: tuple[Hook, ...]
    history_size: int
    indexed: bool  # a rolling detector reads the per-signature index
    aggregator: Aggregator
    turn_policy: TurnPolicy
    drop_fields: frozenset[str]
    per_tool: Mapping[str, tuple[frozenset[str], frozenset[str] | None]]
    outcome_reader: OutcomeReader | None  # when a detector reads outcomes (Detector.reads_outcomes)
    unknown_tools: UnknownTools | None = None  # when a detector reads them (reads_unknown_tools)

    def outcome_rules(self, tool: str) -> tuple[frozenset[str], frozenset[str] | None]:
        """(fields to drop, fields to keep or None) for a tool's results."""
        return self.per_tool.get(tool) or (self.drop_fields, None)


class Unconfigured(Detector):
    """Stands in for a detector whose `configure` raised: each check is a fault, reported on
    the first call and handled per `fail_mode` like any detector that raises."""

    def __init__(self, ident: str, exc: BaseException) -> None:
        self.id = ident  # type: ignore[misc]
        self.error = f"configure failed: {error_text(exc)}"

    def check(self, call: Any, state: Any, cfg: Any) -> Any:
        raise RuntimeError(self.error)


def _copier(config: Mapping[str, Any]) -> Callable[[], dict[str, Any]]:
    """Fresh copies of the effective rules for plugins' `configure` (a plugin that changed the
    rules dict would change them for every other detector and the aggregator): the rules
    are JSON data, so a copy is one parse of their text, made once per policy."""
    try:
        text = json.dumps(config)
    except (TypeError, ValueError):
        return lambda: copy.deepcopy(dict(config))
    return lambda: json.loads(text)  # type: ignore[no-any-return]


def is_active(detector: Detector, options: Mapping[str, Any], enabled: Any) -> bool:
    """Gating: the master switch first, then the detector's own switch; with the master unset,
    a rolling detector runs only when its own switch is true (`generic_repeat: {enabled: true}`
    alone turns it on)."""
    gating = detector.gating
    own = options.get("enabled")
    if gating == ROLLING and enabled is not True:
        return enabled is not False and own is True
    if gating == UNLESS_DISABLED and enabled is False:
        return False
    return own is not False


def compile_policy(config: Mapping[str, Any], registry: Registry) -> CompiledPolicy:
    """Build the pipeline for one effective (merged, repaired) rules dict."""
    loop = config.get("loop_detection") or {}
    options_by_id = config.get("detectors") or {}
    stages: list[Stage] = []
    copies: Callable[[], dict[str, Any]] | None = None
    for entry in registry.entries:
        options = options_by_id.get(entry.id) or {}
        if not is_active(entry.detector, options, loop.get("enabled")):
            continue
        detector, cfg, trusted = entry.detector, None, entry.builtin
        try:
            own = {k: v for k, v in options.items() if k != "enabled"}
            whole = config
            if not entry.builtin:  # a plugin gets copies: the rules are shared by every stage
                copies = copies or _copier(config)
                own, whole = copy.deepcopy(own), copies()
            cfg = detector.configure(own, whole)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - a plugin's configure must not break sessions
            detector, trusted = Unconfigured(detector.id, exc), False
        stages.append(Stage(detector, cfg, entry.source, trusted, entry.budget))
    aggregator = Aggregator(config)
    rank = aggregator.order  # the tie-break order is the pipeline's order too
    stages.sort(key=lambda s: rank.get(s.detector.id, len(rank)))
    outcomes = config.get("outcomes") or {}
    drop = frozenset(outcomes.get("drop_fields") or ())
    per_tool: dict[str, tuple[frozenset[str], frozenset[str] | None]] = {}
    for tool, rule in (outcomes.get("tools") or {}).items():
        rule = rule or {}
        keep = None if rule.get("keep") is None else frozenset(rule["keep"])
        per_tool[tool] = (drop | frozenset(rule.get("drop") or ()), keep)
    checks = _hooks([s for s in stages if not s.detector.repeats_only], "check")
    repeat_checks = _hooks([s for s in stages if s.detector.repeats_only], "check")
    return CompiledPolicy(
        config=config,
        stages=tuple(stages),
        checks=checks,
        repeat_checks=repeat_checks,
        seen_checks=checks + repeat_checks,
        afters=_hooks(stages, "after"),
        compaction_hooks=_hooks(stages, "compacted"),
        history_size=max(1, int(loop.get("history_size", default("loop_detection.history_size")))),
        indexed=any(s.detector.gating == ROLLING for s in stages),
        aggregator=aggregator,
        turn_policy=TurnPolicy.from_config(config),
        drop_fields=drop,
        per_tool=per_tool,
        outcome_reader=(
            OutcomeReader(config) if any(s.detector.reads_outcomes for s in stages) else None
        ),
        unknown_tools=(
            UnknownTools.from_config(config)
            if any(s.detector.reads_unknown_tools for s in stages)
            else None
        ),
    )
