"""unknown_tool_repeat — calling a tool that does not exist, again and again (SPEC §3.4).

A rolling detector: runs only when `loop_detection.enabled` is true.

A failed call is an unknown-tool failure when its error text matches one of
`patterns` (case-insensitive regular expressions; a named group `name`
captures the missing tool's name), or when `known_tools` is non-empty and the
called tool is not in it. Walking back from the newest call of the run, it
counts consecutive unknown-tool failures of the current call's tool naming the
same unknown tool (the arguments may differ), and stops at anything else.
A call of that tool the guard blocked continues the streak (SPEC §1: blocking
never resets escalation), so a blocked retry stays blocked.

- critical when that streak reaches `unknown_tool_threshold` (10). No warn tier.

Options: `patterns` (default: `unknown tool: NAME`, `tool NAME not found`,
`tool NAME is not available`), `known_tools` (default: empty = not used).

Flagged: `serach` failing with "Unknown tool: serach" 10 times in a row, the
11th call -> critical. Not flagged: 10 failures broken by one success.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import regex

from loopguard.decision import Vote
from loopguard.detector import ROLLING, Detector
from loopguard.history import VETO, Call, SessionState, scoped_newest_first
from loopguard.hookspecs import hookimpl
from loopguard.polls import thresholds

MAX_PATTERN_LENGTH = 500
_MATCH_TIMEOUT = 0.05  # seconds: a pathological user pattern must not stall a call
_SCAN_LIMIT = 4000  # characters of an error text searched


class UnknownToolRepeat(Detector):
    id = "unknown_tool_repeat"
    levels = ("critical",)
    gating = ROLLING
    options_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "patterns": {"type": "array", "items": {"type": "string", "format": "regex",
                                                   "minLength": 1, "maxLength": MAX_PATTERN_LENGTH}},
            "known_tools": {"type": "array", "items": {"type": "string", "minLength": 1}},
        },
        "additionalProperties": False,
    }

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        compiled = []
        for pattern in options.get("patterns") or ():
            try:
                compiled.append(regex.compile(str(pattern)[:MAX_PATTERN_LENGTH], regex.IGNORECASE))
            except regex.error:
                continue  # lint reports it; the engine skips it
        known = frozenset(options.get("known_tools") or ())
        return int(thresholds(config).get("unknown_tool_threshold", 10)), tuple(compiled), known

    def after(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        """Mark an unknown-tool failure on the call (read by `check` later)."""
        _, patterns, known = cfg
        if call.error is None:
            return None
        text = call.error[:_SCAN_LIMIT]
        for pattern in patterns:
            try:
                match = pattern.search(text, timeout=_MATCH_TIMEOUT)
            except TimeoutError:
                continue
            if match:
                named = match.groupdict().get("name")
                call.unknown = named or call.tool
                return None
        if known and call.tool not in known:
            call.unknown = call.tool
        return None

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        threshold = cfg[0]
        streak: list[int] = []
        name: str | None = None
        for entry in scoped_newest_first(state, call.run_id):
            if entry.tool != call.tool:
                break
            if entry.outcome == VETO:  # a blocked retry extends the streak (SPEC §1)
                streak.append(entry.seq)
                continue
            if entry.unknown is None or (name is not None and entry.unknown != name):
                break
            name = entry.unknown
            streak.append(entry.seq)
            if len(streak) >= threshold:
                break
        if name is None or len(streak) < threshold:
            return None
        return self.vote("critical", len(streak), f"{call.tool}:{name}",
                         f"{call.tool} failed {len(streak)} times in a row: tool {name!r} "
                         "does not exist.", tuple(reversed(streak)))


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [UnknownToolRepeat()]
