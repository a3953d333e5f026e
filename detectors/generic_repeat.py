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

from loopguard.detectors.support import NO_OPTIONS
from loopguard.detectors.support.rolling import streak_vote, tier_thresholds
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
    same_signature,
    short,
    thresholds,
)

_SEQ = attrgetter("seq")


def _stalled(tool: str, count: int) -> str:
    return f"{tool} was called {count} times in a row with the same arguments and the same result."


class GenericRepeat(Detector):
    id = "generic_repeat"
    levels = ("warn", "critical")
    gating = ROLLING
    repeats_only = True  # it counts entries with the call's arguments: none, no vote
    openclaw_name = "genericRepeat"
    settings = ROLLING_SETTINGS + TIER_SETTINGS
    options_schema: ClassVar[dict[str, Any]] = NO_OPTIONS

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        return (*tier_thresholds(thresholds(config)), PollMatcher.from_config(config))

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        warning, critical, polls = cfg
        entries = same_signature(state, call)
        if len(entries) < warning and len(entries) < critical:
            return None
        if polls.matches(call.tool, call.args):
            return None
        key = short(call.digest)
        vote = None
        if len(entries) >= critical:  # (a streak counts some of these entries: no more)
            vote = streak_vote(self, call, state, (("critical", critical),), key, _stalled)
        if vote is not None or len(entries) < warning:
            return vote
        return self.vote(
            "warn",
            len(entries),
            key,
            f"{call.tool} was already called {len(entries)} times with these arguments.",
            tuple(map(_SEQ, entries[-EVIDENCE_MAX:])),  # (map: it runs on every repeat)
        )


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [GenericRepeat()]
