"""ping_pong — bouncing between two calls (SPEC §3.3).

A rolling detector: runs only when `loop_detection.enabled` is true.

Let L be the newest call in the current run and O the one before it, which
must differ from L. Walking back, the history alternates L, O, L, O … up to
the first break: that is the tail. When the current call is O again, the
count is the tail's length plus the current call.

- warn when the count reaches `warning_threshold` (10);
- critical when it reaches `critical_threshold` (20) and no side made
  progress: every tail call has a result, and each side always got the same
  result (blocked calls count as the same).

Options: `enabled` only; thresholds come from `loop_detection`.

Flagged: `read(a)`, `list(dir)`, `read(a)`, `list(dir)` … the 10th call of the
alternation -> warn. Not flagged: `read(a)`, `list(dir)`, `read(b)`, `list(dir)`
(the tail breaks at `read(b)`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopguard.decision import Vote
from loopguard.detector import ROLLING, Detector, short
from loopguard.history import VETO, Call, HistoryEntry, SessionState, scoped_newest_first
from loopguard.hookspecs import hookimpl
from loopguard.polls import thresholds


class PingPong(Detector):
    id = "ping_pong"
    levels = ("warn", "critical")
    gating = ROLLING
    options_schema: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        limits = thresholds(config)
        return int(limits.get("warning_threshold", 10)), int(limits.get("critical_threshold", 20))

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        warning, critical = cfg
        entries = scoped_newest_first(state, call.run_id)
        newest = next(entries, None)
        other = next(entries, None)
        if newest is None or other is None or other.digest == newest.digest:
            return None
        if call.digest != other.digest:
            return None
        tail: list[HistoryEntry] = [newest, other]
        for entry in entries:
            if entry.digest != tail[-2].digest:
                break
            tail.append(entry)
        count = len(tail) + 1
        if count < warning and count < critical:
            return None
        key = "-".join(sorted((short(newest.digest), short(other.digest))))
        evidence = tuple(e.seq for e in reversed(tail))
        if count >= critical and _no_progress(tail):
            return self.vote("critical", count, key,
                             f"{call.tool} and {newest.tool} alternated for {count} calls with "
                             "no change in their results.", evidence)
        if count >= warning:
            return self.vote("warn", count, key,
                             f"{call.tool} and {newest.tool} alternated for {count} calls.",
                             evidence)
        return None


def _no_progress(tail: list[HistoryEntry]) -> bool:
    """Every tail entry has an outcome and each side's outcomes are all equal."""
    for side in (tail[0::2], tail[1::2]):
        reference: bytes | None = None
        for entry in side:
            if entry.outcome is None:
                return False
            if entry.outcome == VETO:
                continue
            if reference is None:
                reference = entry.outcome
            elif entry.outcome != reference:
                return False
    return True


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [PingPong()]
