"""global_circuit_breaker — the last resort for a pattern that never progresses.

A rolling detector: runs only when `loop_detection.enabled` is true. It
applies to every call, polls included.

- breaker when the no-progress streak of the current call (same tool, same
  arguments, same result, vetoes counting as the same) reaches
  `global_circuit_breaker_threshold` (30).

Options: `enabled` only; the threshold comes from `loop_detection`.

Flagged: `fetch({"url": "x"})` returning the same error 30 times in a row,
the 31st call -> breaker. Not flagged: 30 calls whose results differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from loopguard.detectors.support import NO_OPTIONS
from loopguard.detectors.support.rolling import streak_vote
from loopguard.plugin import (
    ROLLING,
    ROLLING_SETTINGS,
    Call,
    Detector,
    SessionState,
    Vote,
    hookimpl,
    same_signature,
    short,
    thresholds,
)


def _tripped(tool: str, count: int) -> str:
    return f"{tool} made no progress in {count} identical calls; circuit breaker tripped."


class GlobalCircuitBreaker(Detector):
    id = "global_circuit_breaker"
    levels = ("breaker",)
    gating = ROLLING
    repeats_only = True  # it counts entries with the call's arguments: none, no vote
    openclaw_name = "globalCircuitBreaker"
    settings = (*ROLLING_SETTINGS, "loop_detection.global_circuit_breaker_threshold")
    options_schema: ClassVar[dict[str, Any]] = NO_OPTIONS

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        return int(thresholds(config)["global_circuit_breaker_threshold"])

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        if len(same_signature(state, call)) < cfg:
            return None
        return streak_vote(self, call, state, (("breaker", cfg),), short(call.digest), _tripped)


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [GlobalCircuitBreaker()]
