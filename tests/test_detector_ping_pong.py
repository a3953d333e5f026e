"""ping_pong: alternating between two calls; the count includes the current call.

Thresholds (helpers.py): warning 3, critical 5. With A, B in the history, the third call (A)
has count 3 and is the first one flagged.
"""

from __future__ import annotations

import pytest
from helpers import PENDING, UNSET, actions, call, rolling_guard, vote_of

ID = "ping_pong"
A = ("read", {"path": "a"})
B = ("list", {"dir": "."})


def alternate(session, n: int, result_a: object = "ra", result_b: object = "rb", **kw):  # type: ignore[no-untyped-def]
    """Calls A, B, A, B … n times; the before decisions."""
    out = []
    for i in range(n):
        tool, args = A if i % 2 == 0 else B
        result = result_a if i % 2 == 0 else result_b
        out.append(call(session, tool, args, result(i) if callable(result) else result, **kw))
    return out


def test_warn_when_count_including_the_current_call_reaches_warning() -> None:
    session = rolling_guard().session("s")
    decisions = alternate(session, 3)
    assert actions(decisions) == ["allow", "allow", "warn"]
    vote = vote_of(decisions[-1], ID)
    assert vote is not None and (vote.level, vote.count) == ("warn", 3)
    assert sorted(vote.evidence) == [1, 2]


def test_critical_when_count_reaches_critical_without_progress() -> None:
    session = rolling_guard().session("s")
    decisions = alternate(session, 5)
    assert actions(decisions) == ["allow", "allow", "warn", "warn", "critical"]
    vote = vote_of(decisions[-1], ID)
    assert vote is not None and (vote.level, vote.count) == ("critical", 5)
    assert sorted(vote.evidence) == [1, 2, 3, 4]


def test_changing_outcomes_on_one_side_never_reach_critical() -> None:
    # generic_repeat would flag B's own no-progress streak; this is about ping_pong alone
    session = rolling_guard(detectors={"generic_repeat": {"enabled": False}}).session("s")
    decisions = alternate(session, 14, result_a=lambda i: f"a{i}")
    assert {vote_of(d, ID).level for d in decisions[2:]} == {"warn"}  # type: ignore[union-attr]
    assert actions(decisions) == ["allow"] * 2 + ["warn"] * 12


def test_pending_calls_allow_warn_but_not_critical() -> None:
    session = rolling_guard().session("s")
    decisions = alternate(session, 8, result_a=PENDING, result_b=PENDING)
    assert [vote_of(d, ID).level for d in decisions[2:]] == ["warn"] * 6  # type: ignore[union-attr]


def test_a_broken_alternation_is_not_flagged() -> None:
    session = rolling_guard().session("s")
    call(session, *A)
    call(session, *B)
    call(session, "read", {"path": "other"})
    call(session, *B)
    assert vote_of(call(session, *A), ID) is None


def test_the_current_call_must_continue_the_alternation() -> None:
    session = rolling_guard().session("s")
    alternate(session, 4)  # A B A B
    assert vote_of(call(session, *B), ID) is None  # B again: a repeat, not a ping-pong
    assert vote_of(call(session, "grep", {"q": "x"}), ID) is None


def test_the_tail_counts_only_the_unbroken_alternation() -> None:
    session = rolling_guard().session("s")
    call(session, "grep", {"q": "x"})
    call(session, *B)
    decisions = alternate(session, 3)  # A(3) B(4) A(5)
    vote = vote_of(decisions[-1], ID)
    assert vote is not None and vote.count == 4  # tail B(4) A(3) B(2), stopped by grep; + A(5)
    assert sorted(vote.evidence) == [2, 3, 4]


def test_another_run_id_hides_history_but_a_new_turn_does_not() -> None:
    session = rolling_guard().session("s")
    for i in range(4):
        session.begin_turn([])
        call(session, *(A if i % 2 == 0 else B), run_id="r1")
    assert call(session, *A, run_id="r2").action == "allow"
    assert call(session, *A).action == "allow"
    session.begin_turn([])
    assert vote_of(call(session, *A, run_id="r1"), ID) is not None


def test_detector_switch_turns_it_off() -> None:
    session = rolling_guard(detectors={ID: {"enabled": False}}).session("s")
    assert all(vote_of(d, ID) is None for d in alternate(session, 8))


@pytest.mark.parametrize(("enabled", "active"), [(UNSET, False), (False, False), (True, True)])
def test_loop_detection_master_switch(enabled: object, active: bool) -> None:
    session = rolling_guard(enabled=enabled).session("s")
    assert (vote_of(alternate(session, 3)[-1], ID) is not None) is active


def test_arguments_differing_only_in_key_order_are_identical() -> None:
    session = rolling_guard().session("s")
    call(session, "read", {"path": "a", "mode": "r"})
    call(session, *B)
    call(session, "read", '{"mode": "r", "path": "a"}')
    call(session, "list", '{"dir":"."}')
    decision = call(session, "read", {"mode": "r", "path": "a"})
    vote = vote_of(decision, ID)
    assert vote is not None and vote.count == 5 and decision.action == "critical"


def test_default_volatile_fields_are_not_progress() -> None:
    session = rolling_guard().session("s")
    decisions = alternate(
        session,
        5,
        result_a=lambda i: {"body": "x", "requestId": i},
        result_b=lambda i: {"items": [], "timestamp": i},
    )
    assert decisions[-1].action == "critical"


def test_per_tool_drop_rule_is_not_progress() -> None:
    session = rolling_guard(outcomes={"tools": {"read": {"drop": ["etag"]}}}).session("s")
    decisions = alternate(session, 5, result_a=lambda i: {"body": "x", "etag": i})
    assert decisions[-1].action == "critical"


def test_a_blocked_alternation_stays_blocked_and_escalates() -> None:
    session = rolling_guard().session("s")
    decisions = alternate(session, 6)
    assert actions(decisions[4:]) == ["critical", "breaker"]
    assert decisions[5].escalated and vote_of(decisions[5], ID).level == "critical"  # type: ignore[union-attr]
    assert session.history()[4].outcome == b"veto"


def test_without_escalation_a_blocked_alternation_stays_critical() -> None:
    session = rolling_guard(aggregator={"escalate_criticals": 0}).session("s")
    decisions = alternate(session, 7)
    assert actions(decisions[4:]) == ["critical"] * 3


def test_the_tail_stops_at_a_repeated_entry() -> None:
    session = rolling_guard().session("s")
    call(session, *A)
    call(session, *A)
    call(session, *B)
    vote = vote_of(call(session, *A), ID)  # tail B(3) A(2), stopped by A(1)
    assert vote is not None and vote.count == 3 and sorted(vote.evidence) == [2, 3]


def test_other_runs_in_between_do_not_break_the_alternation() -> None:
    session = rolling_guard().session("s")
    for i in range(3):
        call(session, *(A if i % 2 == 0 else B), run_id="r1")
        call(session, "grep", {"q": i}, run_id="r2")
    vote = vote_of(call(session, *B, run_id="r1"), ID)
    assert vote is not None and vote.count == 4


def test_the_count_is_bounded_by_the_history() -> None:
    session = rolling_guard(loop={"history_size": 3}).session("s")
    decisions = alternate(session, 10)
    counts = [vote_of(d, ID).count for d in decisions[2:]]  # type: ignore[union-attr]
    assert counts == [3] + [4] * 7
    assert "critical" not in actions(decisions)


def test_progress_that_left_the_history_no_longer_counts() -> None:
    session = rolling_guard(loop={"history_size": 6}).session("s")
    # only A's first result differs; while it is in the history, no critical
    decisions = alternate(session, 7, result_a=lambda i: "a0" if i == 0 else "a1")
    assert actions(decisions) == ["allow"] * 2 + ["warn"] * 5
    decision = call(session, *B)  # call 1 has been evicted: no progress is left in view
    vote = vote_of(decision, ID)
    assert vote is not None and (vote.level, vote.count) == ("critical", 7)
    assert sorted(vote.evidence) == [2, 3, 4, 5, 6, 7]
