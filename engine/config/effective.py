"""Per-agent merging and threshold repair, on plain rules dicts.

`deep_merge` is the one merge rule of rules files: mappings merge key by key,
lists and scalars replace. It serves both `extends:` layering and per-agent
overrides. `effective_config` builds what one agent runs with: the global
blocks, the agent's block merged over them, then the thresholds repaired so
that warning < critical < global breaker holds:

- if critical <= warning, critical becomes warning + 1;
- then if breaker <= critical, breaker becomes critical + 1;
- warning is never lowered.

Nothing here mutates its input; the result shares no containers with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loopguard.config.values import copy_tree
from loopguard.text.hints import is_int

WARNING = "warning_threshold"
CRITICAL = "critical_threshold"
BREAKER = "global_circuit_breaker_threshold"


@dataclass(frozen=True)
class Repair:
    """One threshold raised by the repair: which field, from what, to what."""

    field: str  # dotted, e.g. "loop_detection.critical_threshold"
    old: int
    new: int


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`override` over `base`: mappings merge key by key; lists and scalars replace."""
    result = {k: copy_tree(v) for k, v in base.items()}
    for key, value in override.items():
        current = result.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            result[key] = deep_merge(current, value)
        else:
            result[key] = copy_tree(value)
    return result


def repair_thresholds(loop: dict[str, Any], prefix: str = "loop_detection") -> list[Repair]:
    """Raise critical and breaker in place until the ordering holds; say what changed."""
    repairs: list[Repair] = []
    warning, critical, breaker = loop.get(WARNING), loop.get(CRITICAL), loop.get(BREAKER)
    if is_int(warning) and is_int(critical) and critical <= warning:
        repairs.append(Repair(f"{prefix}.{CRITICAL}", critical, warning + 1))
        critical = loop[CRITICAL] = warning + 1
    if is_int(critical) and is_int(breaker) and breaker <= critical:
        repairs.append(Repair(f"{prefix}.{BREAKER}", breaker, critical + 1))
        loop[BREAKER] = critical + 1
    return repairs


def effective_config(
    data: Mapping[str, Any], agent: str | None = None
) -> tuple[dict[str, Any], list[Repair]]:
    """The config one agent runs with (no `agents` key) and the repairs it needed.

    An unknown agent (or None) gets the global blocks only.
    """
    agents = data.get("agents")
    block = agents.get(agent) if agent is not None and isinstance(agents, Mapping) else None
    globals_only = {k: v for k, v in data.items() if k != "agents"}
    if isinstance(block, Mapping):
        config = deep_merge(globals_only, block)
    else:
        config = copy_tree(globals_only)
    loop = config.get("loop_detection")
    repairs = repair_thresholds(loop) if isinstance(loop, dict) else []
    return config, repairs
