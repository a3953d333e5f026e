"""known_poll_no_progress — polling something that never changes.

A rolling detector: runs only when `loop_detection.enabled` is true, and only
on poll calls declared in its options. It counts the no-progress streak: the
recent polls with the same arguments that returned the same result.

- warn at a streak of `warning_threshold` (10);
- critical at a streak of `critical_threshold` (20).
A poll whose output changes is never flagged.

Options: `poll_tools`, a list of `{tool: NAME}` or
`{tool: NAME, when_args: {ARG: [VALUES]}}` (default: `command_status`, and
`process` when `action` is `poll` or `log`).

Flagged: `command_status({"id": 7})` returning `{"state": "running"}` for the
11th time -> warn. Not flagged: the same poll whose `progress` field changes
every time; `read({"path": "a"})` (not a poll).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from loopguard.detectors.support.rolling import streak_vote, tier_thresholds
from loopguard.plugin import (
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

_ARG_VALUES = {"type": "array", "items": {"type": ["string", "number", "boolean"]}, "minItems": 1}


def _unchanged(tool: str, count: int) -> str:
    return f"{tool} was polled {count} times with no change in its output."


class KnownPollNoProgress(Detector):
    id = "known_poll_no_progress"
    levels = ("warn", "critical")
    gating = ROLLING
    repeats_only = True  # it counts entries with the call's arguments: none, no vote
    openclaw_name = "knownPollNoProgress"
    settings = ROLLING_SETTINGS + TIER_SETTINGS
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "poll_tools": {
                "description": "Tools (optionally only with these argument values) whose calls "
                "are polls: repeated, they wait for a change instead of looping.",
                "type": "array",
                "x-loopguard-poll-tools": True,
                "default": [
                    {"tool": "command_status"},
                    {"tool": "process", "when_args": {"action": ["poll", "log"]}},
                ],
                "items": {
                    "type": "object",
                    "properties": {
                        "tool": {
                            "description": "The tool's name.",
                            "type": "string",
                            "minLength": 1,
                        },
                        "when_args": {
                            "description": "Argument name -> the values that make the call a poll.",
                            "type": "object",
                            "additionalProperties": _ARG_VALUES,
                        },
                    },
                    "required": ["tool"],
                    "additionalProperties": False,
                },
            },
        },
        "additionalProperties": False,
    }

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        polls = {**self.option_defaults(), **options}["poll_tools"]
        return (*tier_thresholds(thresholds(config)), PollMatcher(polls))

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        warning, critical, polls = cfg
        if not polls.matches(call.tool, call.args):
            return None
        if len(same_signature(state, call)) < min(warning, critical):
            return None
        tiers = (("critical", critical), ("warn", warning))
        return streak_vote(self, call, state, tiers, short(call.digest), _unchanged)


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [KnownPollNoProgress()]
