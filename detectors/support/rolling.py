"""What the rolling detectors share: the warn and critical thresholds (`generic_repeat`,
`known_poll_no_progress`, `ping_pong`) and the vote on a call's no-progress streak
(`generic_repeat`, `known_poll_no_progress`, `global_circuit_breaker`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from loopguard.decision import Vote
from loopguard.state.history import Call, SessionState, no_progress_streak

if TYPE_CHECKING:
    from loopguard.plugin import Detector


def tier_thresholds(limits: Mapping[str, Any]) -> tuple[int, int]:
    """(warning, critical) of a `loop_detection` block (`thresholds(config)`)."""
    return int(limits["warning_threshold"]), int(limits["critical_threshold"])


def streak_vote(
    detector: Detector,
    call: Call,
    state: SessionState,
    tiers: tuple[tuple[str, int], ...],
    key: str,
    message: Callable[[str, int], str],
) -> Vote | None:
    """The detector's vote at the first of `tiers` (level, threshold), highest level first,
    whose threshold the call's no-progress streak reaches (same tool, arguments and result; a
    blocked call counts as the same), or None. The vote counts the streak, cites its calls and
    has the key `key` (the caller's `short(call.digest)`) and the text `message(tool, count)`."""
    count, evidence = no_progress_streak(state, call)
    for level, threshold in tiers:
        if count >= threshold:
            return detector.vote(level, count, key, message(call.tool, count), evidence)
    return None
