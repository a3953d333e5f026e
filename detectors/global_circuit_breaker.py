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

from loopguard.plugin import (
    ROLLING,
    ROLLING_SETTINGS,
    Call,
    Detector,
    SessionState,
    Vote,
    hookimpl,
    no_progress_streak,
    same_signature,
    short,
    thresholds,
)


class GlobalCircuitBreaker(Detector):
    id = "global_circuit_breaker"
    levels = ("breaker",)
    gating = ROLLING
    openclaw_name = "globalCircuitBreaker"
    settings = (*ROLLING_SETTINGS, "loop_detection.global_circuit_breaker_threshold")
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        return int(thresholds(config)["global_circuit_breaker_threshold"])

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        entries = same_signature(state, call)
        if len(entries) < cfg:
            return None
        streak, evidence = no_progress_streak(state, call)
        if streak < cfg:
            return None
        return self.vote(
            "breaker",
            streak,
            short(call.digest),
            f"{call.tool} made no progress in {streak} identical calls; circuit breaker tripped.",
            evidence,
        )


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [GlobalCircuitBreaker()]
