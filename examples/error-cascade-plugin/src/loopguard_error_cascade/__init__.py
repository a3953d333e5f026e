"""error_cascade — one tool failing again and again while the model keeps changing its arguments.

A third-party detector: it ships in its own distribution
(`loopguard-error-cascade`) and reaches loopguard through the entry-point
group `loopguard.detectors`, exactly as the built-ins do. It is on as soon as
it is installed (`detectors.error_cascade.enabled: false` turns it off) and
does not depend on `loop_detection.enabled`.

Before each call it walks back from the newest call of the current run while
those calls are failures of the same tool. When that failure streak holds
`threshold` calls or more and their arguments are not all identical, it votes
`level` on the next call of that tool. Identical arguments are left to the
built-in repeat detectors; a success, a call still pending, a blocked call or
a call to another tool ends the streak.

Options: `threshold` (4, at least 2), `level` (`warn`; or `critical`).

Flagged: `fetch({"url": "a"})`, `fetch({"url": "b"})`, `fetch({"url": "c"})`
and `fetch({"url": "d"})` all fail -> warn on the fifth `fetch` call.
Not flagged: `fetch({"url": "a"})` failing four times (identical arguments);
three failing fetches, one that succeeds, then another failing one (the
streak restarts at the success).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import loopguard
from loopguard.state.history import scoped_newest_first


class ErrorCascade(loopguard.Detector):
    """Votes when a tool's consecutive failures come with different arguments."""

    id = "error_cascade"
    levels = ("warn", "critical")
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "threshold": {"type": "integer", "minimum": 2,
                          "description": "Consecutive failures of one tool that trigger a vote."},
            "level": {"enum": ["warn", "critical"],
                      "description": "The level of the vote."},
        },
        "additionalProperties": False,
    }
    defaults: ClassVar[dict[str, Any]] = {"threshold": 4, "level": "warn"}

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        merged = {**self.defaults, **options}
        return int(merged["threshold"]), str(merged["level"])

    def check(self, call: loopguard.Call, state: loopguard.SessionState,
              cfg: Any) -> loopguard.Vote | None:
        threshold, level = cfg
        streak: list[int] = []
        digests: set[bytes] = set()
        for entry in scoped_newest_first(state, call.run_id):
            if entry.tool != call.tool or not entry.failed:
                break
            streak.append(entry.seq)
            digests.add(entry.digest)
        if len(streak) < threshold or len(digests) < 2:
            return None
        return self.vote(level, len(streak), call.tool,
                         f"{call.tool} failed {len(streak)} times in a row with "
                         f"{len(digests)} different arguments.", tuple(reversed(streak)),
                         code="error_cascade")


@loopguard.hookimpl
def loopguard_register_detectors() -> list[loopguard.Detector]:
    return [ErrorCascade()]
