"""A plugin's vote counts only as its own, well-formed vote (issue 22, items 17 and 18): it
cannot vote under another detector's id or key, a hostile value in a vote is a fault (never an
exception out of `before_call`), and counts and evidence are bounded so the decision log line
always prints.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

import loopguard
from loopguard.detection.plugins import Registered, Registry, load_registry


def guard_with(*detectors: loopguard.Detector, **blocks: Any) -> loopguard.Guard:
    base = load_registry()
    extra = tuple(Registered(d, f"lgfake[{d.id}]", False) for d in detectors)
    registry = Registry(base.entries + extra, (), base.plugin_manager)
    return loopguard.Guard.from_dict({"version": 1, **blocks}, registry=registry)


class RaisingEq(str):
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    __hash__ = str.__hash__


class RaisingClass:
    @property  # type: ignore[misc]
    def __class__(self) -> Any:
        raise RuntimeError("class")


class Voter(loopguard.Detector):
    id = "voter"
    levels = ("warn", "critical", "breaker")

    def __init__(self, make: Any) -> None:
        self.make = make

    def check(self, call: Any, state: Any, cfg: Any) -> Any:
        return self.make(self)


V = loopguard.Vote
BAD = {
    "another-detectors-id": lambda d: V("doom_loop_exact", "breaker", 99, "doom_loop_exact:x", "m"),
    "an-unregistered-id": lambda d: V("nobody", "breaker", 1, "nobody:x", "m"),
    "another-detectors-key": lambda d: V("voter", "warn", 1, "doom_loop_exact:abc", "m"),
    "an-unprefixed-key": lambda d: V("voter", "warn", 1, "abc", "m"),
    "level-raising-eq": lambda d: d.vote(RaisingEq("warn"), 1, "k", "m"),
    "key-raising-eq": lambda d: V("voter", "warn", 1, RaisingEq("voter:k"), "m"),
    "detector-raising-eq": lambda d: V(RaisingEq("voter"), "warn", 1, "voter:k", "m"),
    "message-raising-eq": lambda d: d.vote("warn", 1, "k", RaisingEq("m")),
    "vote-class-raises": lambda d: RaisingClass(),
    "count-class-raises": lambda d: V("voter", "warn", RaisingClass(), "voter:k", "m"),
    "count-huge": lambda d: d.vote("breaker", 10**10000, "k", "m"),
    "count-negative": lambda d: d.vote("warn", -1, "k", "m"),
    "evidence-huge": lambda d: d.vote("warn", 1, "k", "m", (2**64,)),
    "evidence-long": lambda d: d.vote("warn", 1, "k", "m", tuple(range(1, 1000))),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_vote_that_is_not_its_own_or_not_well_formed_is_a_fault(case: str) -> None:
    session = guard_with(Voter(BAD[case])).session("s")
    decision = session.before_call("read", {"path": "a"})  # used to raise or be obeyed
    assert decision.action == "allow" and decision.votes == ()
    assert len(decision.faults) == 1 and decision.faults[0].startswith("lgfake[voter]: TypeError")
    decision.to_dict()


def test_a_forged_vote_does_not_stand_in_for_the_builtin() -> None:
    forged = guard_with(Voter(BAD["another-detectors-id"])).session("s")
    assert forged.before_call("read", {"path": "a"}).detector is None
    # the built-in's own vote still comes, on its own count
    forged.after_call("read", {"path": "a"}, "x")
    forged.before_call("read", {"path": "a"})
    forged.after_call("read", {"path": "a"}, "x")
    third = forged.before_call("read", {"path": "a"})
    assert third.detector == "doom_loop_exact" and third.top is not None
    assert third.top.count == 3 and "forged" not in (third.message or "")


def test_a_plugins_own_vote_at_the_bounds_counts() -> None:
    def at_bounds(d: Voter) -> loopguard.Vote:
        return d.vote("warn", 2**63 - 1, "k", "many", tuple(range(64)))

    decision = guard_with(Voter(at_bounds)).session("s").before_call("read", {})
    assert (decision.action, decision.detector, decision.faults) == ("warn", "voter", ())


class _Catching(logging.Handler):
    """Formats every record as a real handler does, and keeps what failed."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.errors: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        self.errors.append(str(record.msg))


@pytest.fixture
def decision_log() -> Any:
    handler = _Catching()
    logger = logging.getLogger("loopguard.decisions")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def test_a_huge_count_never_reaches_the_decision_log(decision_log: _Catching) -> None:
    session = guard_with(Voter(BAD["count-huge"])).session("s")
    session.before_call("read", {"path": "a"})
    assert decision_log.errors == []


def test_a_reported_decision_with_huge_numbers_still_logs(decision_log: _Catching) -> None:
    session = loopguard.Guard.from_dict({"version": 1}).session("s")
    vote = loopguard.Vote("round_cap", "breaker", 10**10000, "round_cap:x", "too many rounds")
    decision = loopguard.Decision(
        "breaker", (vote,), "stop", "t", None, 10**5000, 10**5000, None, "before", "round_cap"
    )
    assert session.report(decision) is decision
    assert decision_log.errors == []
    assert decision_log.lines and "too many rounds" in decision_log.lines[0]
