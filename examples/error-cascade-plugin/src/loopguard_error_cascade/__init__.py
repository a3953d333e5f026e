"""error_cascade — one tool failing again and again while the model keeps changing its arguments.

A third-party detector: it ships in its own distribution
(`loopguard-error-cascade`) and reaches loopguard through the entry-point
group `loopguard.detectors`, exactly as the built-ins do, and imports only
`loopguard.plugin`. It is on as soon as it is installed
(`detectors.error_cascade.enabled: false` turns it off) and does not depend on
`loop_detection.enabled`.

Before each call it walks back from the newest call of the current run while
those calls are failures of the same tool. When that failure streak holds
`threshold` calls or more and their arguments are not all identical, it votes
`level` on the next call of that tool. Identical arguments are left to the
built-in repeat detectors; a success, a call still pending, a blocked call or
a call to another tool ends the streak.

Options (defaults in the options schema): `threshold` (4, at least 2), `level`
(`warn`; or `critical`). Shared setting read: `loop_detection.history_size`
(the walk sees only the calls the history keeps, so a `threshold` above it
can never be reached; its lint check `error-cascade-unreachable` says so).
In OpenClaw configs it is `tools.loopDetection.detectors.errorCascade`.

Flagged: `fetch({"url": "a"})`, `fetch({"url": "b"})`, `fetch({"url": "c"})`
and `fetch({"url": "d"})` all fail -> warn on the fifth `fetch` call.
Not flagged: `fetch({"url": "a"})` failing four times (identical arguments);
three failing fetches, one that succeeds, then another failing one (the
streak restarts at the success).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from loopguard.plugin import (
    Call,
    Detector,
    Finding,
    LintCheck,
    LintContext,
    SessionState,
    Vote,
    hookimpl,
    scoped_newest_first,
    setting,
)

ID = "error_cascade"
HISTORY = "loop_detection.history_size"


def unreachable(ctx: LintContext) -> list[Finding]:
    """`error_cascade.threshold` above `loop_detection.history_size`: it can never fire.

    The detector walks the session history, which keeps `history_size` calls, so
    a longer failure streak is never seen. Judged on the effective settings of
    every scope (the global one and each agent's).

    Passes: `detectors: {error_cascade: {threshold: 4}}` (history_size 30).
    Fails: `detectors: {error_cascade: {threshold: 40}}` (history_size 30).
    """
    found = []
    for scope in ctx.option_scopes(ID):
        threshold = {**ErrorCascade.option_defaults(), **scope.options}.get("threshold")
        size = setting(scope.config, HISTORY)
        if isinstance(threshold, int) and isinstance(size, int) and threshold > size:
            found.append(
                ctx.option_finding(
                    scope,
                    ["threshold"],
                    "warning",
                    f"error_cascade threshold {threshold} can never be reached{scope.who}: "
                    f"history_size is {size}",
                    f"lower threshold to {size} or less, or raise loop_detection.history_size",
                    "error-cascade-unreachable",
                )
            )
    return found


class ErrorCascade(Detector):
    """Votes when a tool's consecutive failures come with different arguments."""

    id = ID
    levels = ("warn", "critical")
    settings = (HISTORY,)
    openclaw_name = "errorCascade"
    lint_checks = (
        LintCheck("error-cascade-unreachable", "warning", unreachable.__doc__ or "", unreachable),
    )
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "threshold": {
                "type": "integer",
                "minimum": 2,
                "default": 4,
                "description": "Consecutive failures of one tool that trigger a vote.",
            },
            "level": {
                "enum": ["warn", "critical"],
                "default": "warn",
                "description": "The level of the vote.",
            },
        },
        "additionalProperties": False,
    }

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        merged = {**self.option_defaults(), **options}
        return int(merged["threshold"]), str(merged["level"])

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
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
        return self.vote(
            level,
            len(streak),
            call.tool,
            f"{call.tool} failed {len(streak)} times in a row with "
            f"{len(digests)} different arguments.",
            tuple(reversed(streak)),
            code="error_cascade",
        )


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [ErrorCascade()]
