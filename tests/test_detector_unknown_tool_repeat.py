"""unknown_tool_repeat: a run of failures naming the same unknown tool.

Threshold (helpers.py): unknown_tool_threshold 3, so three failures in a row make the fourth
call critical. No warn tier; the arguments may differ.
"""

from __future__ import annotations

import pytest
from helpers import PENDING, UNSET, actions, call, rolling_guard, vote_of

ID = "unknown_tool_repeat"
UNKNOWN = "Unknown tool: serach"


def fail(session, i: int = 0, error: str = UNKNOWN, tool: str = "serach", **kw):  # type: ignore[no-untyped-def]
    return call(session, tool, {"q": f"query {i}"}, error=error, **kw)


def test_critical_on_the_call_after_threshold_failures() -> None:
    session = rolling_guard().session("s")
    first = [fail(session, i) for i in range(3)]
    assert actions(first) == ["allow"] * 3  # no warn tier
    fourth = fail(session, 3)
    vote = vote_of(fourth, ID)
    assert fourth.action == "critical" and vote is not None
    assert (vote.level, vote.count, sorted(vote.evidence)) == ("critical", 3, [1, 2, 3])
    assert "serach" in vote.message


@pytest.mark.parametrize(
    "breaker",
    [
        {"result": "found it"},  # a success
        {"error": "timeout after 30s"},  # another error
        {"result": PENDING},  # a pending entry
    ],
)
def test_the_streak_stops_at_anything_else(breaker: dict[str, object]) -> None:
    session = rolling_guard().session("s")
    fail(session, 0)
    fail(session, 1)
    call(session, "serach", {"q": "x"}, **breaker)  # type: ignore[arg-type]
    fail(session, 2)
    fail(session, 3)
    assert vote_of(fail(session, 4), ID) is None
    assert vote_of(fail(session, 5), ID) is not None


def test_another_tool_in_between_stops_the_streak() -> None:
    session = rolling_guard().session("s")
    fail(session, 0)
    fail(session, 1)
    fail(session, 2, error="Unknown tool: frobnicate", tool="frobnicate")
    fail(session, 3)
    assert vote_of(fail(session, 4), ID) is None


def test_a_different_unknown_name_stops_the_streak() -> None:
    session = rolling_guard().session("s")
    for error in ("Unknown tool: alpha", "Unknown tool: alpha", "Unknown tool: beta"):
        fail(session, error=error)
    assert vote_of(fail(session), ID) is None


def test_failures_broken_by_successes_never_reach_critical() -> None:
    session = rolling_guard().session("s")
    decisions = []
    for i in range(12):
        decisions.append(fail(session, i) if i % 3 else call(session, "serach", {"q": i}, "ok"))
    assert all(vote_of(d, ID) is None for d in decisions)


@pytest.mark.parametrize(
    "error",
    [
        "tool serach not found",
        "Tool `serach` is not available",
        "UNKNOWN TOOL serach",
    ],
)
def test_default_patterns_are_case_insensitive(error: str) -> None:
    session = rolling_guard().session("s")
    for i in range(3):
        fail(session, i, error=error)
    vote = vote_of(fail(session, 3, error=error), ID)
    assert vote is not None and vote.key.endswith("serach:serach")


def test_ordinary_errors_are_not_unknown_tools() -> None:
    session = rolling_guard().session("s")
    decisions = [fail(session, i, error=f"file {i} not found") for i in range(6)]
    assert all(vote_of(d, ID) is None for d in decisions)


def test_known_tools_list_marks_other_names_unknown() -> None:
    rules = {ID: {"known_tools": ["read", "write"]}}
    session = rolling_guard(detectors=rules).session("s")
    for i in range(3):
        fail(session, i, error="boom", tool="deploy")
    assert vote_of(fail(session, 3, error="boom", tool="deploy"), ID) is not None
    for i in range(4):
        decision = fail(session, i, error="boom", tool="read")
    assert vote_of(decision, ID) is None


def test_another_run_id_hides_history_but_a_new_turn_does_not() -> None:
    session = rolling_guard().session("s")
    for i in range(3):
        session.begin_turn([])
        fail(session, i, run_id="r1")
    assert fail(session, 9, run_id="r2").action == "allow"
    assert fail(session, 9).action == "allow"
    # the r2 and no-run entries do not break r1's streak: scopes are separate
    assert fail(session, 10, run_id="r1").action == "critical"


def test_detector_switch_turns_it_off() -> None:
    session = rolling_guard(detectors={ID: {"enabled": False}}).session("s")
    assert actions([fail(session, i) for i in range(6)]) == ["allow"] * 6


@pytest.mark.parametrize(("enabled", "active"), [(UNSET, False), (False, False), (True, True)])
def test_loop_detection_master_switch(enabled: object, active: bool) -> None:
    session = rolling_guard(enabled=enabled).session("s")
    decisions = [fail(session, i) for i in range(4)]
    assert (decisions[-1].action == "critical") is active


def test_threshold_comes_from_the_rules() -> None:
    session = rolling_guard(loop={"unknown_tool_threshold": 5}).session("s")
    decisions = [fail(session, i) for i in range(6)]
    assert actions(decisions) == ["allow"] * 5 + ["critical"]


def test_a_blocked_call_stays_blocked_and_escalates() -> None:
    session = rolling_guard().session("s")
    for i in range(3):
        fail(session, i)
    fourth, fifth = fail(session, 3), fail(session, 4)
    assert fourth.action == "critical"
    assert (fifth.action, fifth.escalated) == ("breaker", True)
    assert vote_of(fifth, ID) is not None


def test_without_escalation_a_blocked_call_stays_critical() -> None:
    session = rolling_guard(aggregator={"escalate_criticals": 0}).session("s")
    for i in range(3):
        fail(session, i)
    # more blocked retries than the threshold: the streak must not end at the vetoes
    assert actions([fail(session, i) for i in range(6)]) == ["critical"] * 6


def test_blocks_by_other_detectors_alone_do_not_make_an_unknown_tool_streak() -> None:
    session = rolling_guard(aggregator={"escalate_criticals": 0}).session("s")
    decisions = [call(session, "read", {"p": 1}, error="disk error") for _ in range(9)]
    assert decisions[-1].blocked  # generic_repeat blocks it
    assert all(vote_of(d, ID) is None for d in decisions)
