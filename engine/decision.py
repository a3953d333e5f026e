"""The one decision record used everywhere: API, runtime, CLI text and JSON, tests.

A `Vote` is one detector's opinion of one tool call; a `Decision` is what the
aggregator made of all the votes for that call. Both are immutable named
tuples: one is built on every tool call, and a frozen dataclass costs about
five times as much to create.
"""

from __future__ import annotations

from typing import Any, NamedTuple

LEVELS = ("warn", "critical", "breaker")
RANK = {"allow": 0, "warn": 1, "critical": 2, "breaker": 3}


class Vote(NamedTuple):
    """One detector's vote: level, how many matching calls, a stable key, why."""

    detector: str
    level: str  # "warn" | "critical" | "breaker"
    count: int  # type: ignore[assignment]  # a field name, shadowing tuple.count on purpose
    key: str  # stable across calls of the same pattern (used to de-duplicate warnings)
    message: str
    evidence: tuple[int, ...] = ()  # sequence numbers of the history entries that matched
    code: str = ""  # machine-readable code, e.g. "compaction_loop_persisted"

    def to_dict(self) -> dict[str, Any]:
        return {
            "detector": self.detector,
            "level": self.level,
            "count": self.count,
            "key": self.key,
            "message": self.message,
            "evidence": list(self.evidence),
            "code": self.code,
        }


class Decision(NamedTuple):
    """What to do with one tool call, and every vote that led there."""

    action: str  # "allow" | "warn" | "critical" | "breaker"
    votes: tuple[Vote, ...] = ()
    message: str | None = None  # what the model should see (note on warn, block text otherwise)
    tool: str = ""
    call_id: str | None = None
    seq: int = 0  # call number in the session, 1-based (matches Vote.evidence)
    turn: int = 0
    run_id: str | None = None
    phase: str = "before"  # "before" (before_call) or "after" (after_call)
    detector: str | None = None  # id of the deciding vote's detector
    escalated: bool = False  # a critical turned into a breaker by an escalation rule
    notify: bool = False  # on warn: whether the note is shown (warnings are de-duplicated)
    faults: tuple[str, ...] = ()  # plugins that failed while checking this call

    @property
    def blocked(self) -> bool:
        """True when the call must not run."""
        return self.action in ("critical", "breaker")

    @property
    def top(self) -> Vote | None:
        """The deciding vote, if any."""
        for vote in self.votes:
            if vote.detector == self.detector:
                return vote
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "tool": self.tool,
            "call_id": self.call_id,
            "seq": self.seq,
            "turn": self.turn,
            "run_id": self.run_id,
            "phase": self.phase,
            "detector": self.detector,
            "escalated": self.escalated,
            "notify": self.notify,
            "message": self.message,
            "faults": list(self.faults),
            "votes": [v.to_dict() for v in self.votes],
        }


def allowed(
    tool: str,
    call_id: str | None,
    seq: int,
    turn: int,
    run_id: str | None,
    phase: str,
    faults: tuple[str, ...] = (),
) -> Decision:
    """The decision on a call without votes (most calls), built as a plain tuple: what the
    aggregator makes of no votes, and what a session answers without asking it."""
    fields = (tool, call_id, seq, turn, run_id, phase, None, False, False, faults)
    return tuple.__new__(Decision, ("allow", (), None, *fields))  # type: ignore[no-any-return]
