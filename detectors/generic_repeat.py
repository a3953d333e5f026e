"""generic_repeat — the same call made again and again.

A rolling detector: runs only when `loop_detection.enabled` is true. It leaves
declared poll calls to `known_poll_no_progress`.

- warn when the current run's history already holds `warning_threshold` (10)
  calls with the same tool and arguments, pending or not;
- critical when the last `critical_threshold` (20) of them returned the same
  result (a no-progress streak; calls the guard blocked count as no progress).

Options: `enabled` only; thresholds come from `loop_detection`.

Flagged: `read({"path": "a.txt"})` for the 11th time in a run -> warn; the
21st time with the same content every time -> critical.
Not flagged: `read` of 30 different files; `command_status` (a poll).
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import attrgetter
from typing import Any, ClassVar

from loopguard.plugin import (
    EVIDENCE_MAX,
    ROLLING,
    ROLLING_SETTINGS,
    TIER_SETTINGS,
    Call,
    Detector,
    PollMatcher,
    SessionState,
    Vote,
    hookimpl,
    no_progress_streak,
    same_signature,
    short,
    thresholds,
)

_SEQ = attrgetter("seq")


class GenericRepeat(Detector):
    id = "generic_repeat"
    levels = ("warn", "critical")
    gating = ROLLING
    openclaw_name = "genericRepeat"
    settings = ROLLING_SETTINGS + TIER_SETTINGS
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        limits = thresholds(config)
        return (
            int(limits["warning_threshold"]),
            int(limits["critical_threshold"]),
            PollMatcher.from_config(config),
        )

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        warning, critical, polls = cfg
        entries = same_signature(state, call)
        if len(entries) < warning and len(entries) < critical:
            return None
        if polls.matches(call.tool, call.args):
            return None
        streak, evidence = no_progress_streak(state, call)
        if streak >= critical:
            return self.vote(
                "critical",
                streak,
                short(call.digest),
                f"{call.tool} was called {streak} times in a row with the same "
                "arguments and the same result.",
                evidence,
            )
        if len(entries) >= warning:
            return self.vote(
                "warn",
                len(entries),
                short(call.digest),
                f"{call.tool} was already called {len(entries)} times with these arguments.",
                tuple(map(_SEQ, entries[-EVIDENCE_MAX:])),  # (map: it runs on every repeat)
            )
        return None


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [GenericRepeat()]
