"""generic_repeat: warn on N earlier identical calls, critical on a no-progress streak.

Thresholds (helpers.py): warning 3, critical 5, global breaker 8. A threshold of N means N
earlier matching entries, so call N+1 is the first one flagged.
"""

from __future__ import annotations

import pytest
from helpers import PENDING, UNSET, actions, call, repeat, rolling_guard, vote_of

ID = "generic_repeat"
READ = {"path": "a.txt"}


def test_warns_on_the_call_after_warning_threshold_earlier_entries() -> None:
    session = rolling_guard().session("s")
    first = [call(session, "read", READ, result=f"v{i}") for i in range(3)]
    assert actions(first) == ["allow"] * 3
    fourth = call(session, "read", READ, result="v3")
    vote = vote_of(fourth, ID)
    assert fourth.action == "warn" and vote is not None
    assert (vote.level, vote.count) == ("warn", 3)


def test_critical_on_the_call_after_critical_threshold_equal_outcomes() -> None:
    session = rolling_guard().session("s")
    decisions = repeat(session, 5, "read", READ, "same")
    assert actions(decisions) == ["allow"] * 3 + ["warn"] * 2  # streak 4 is not critical
    sixth = call(session, "read", READ)
    vote = vote_of(sixth, ID)
    assert sixth.action == "critical" and vote is not None
    assert (vote.level, vote.count) == ("critical", 5)
    assert sorted(vote.evidence) == [1, 2, 3, 4, 5]


def test_warn_evidence_lists_every_matching_entry() -> None:
    session = rolling_guard().session("s")
    for i in range(4):
        call(session, "read", READ, result=f"v{i}")
    call(session, "other", {}, result="x")
    vote = vote_of(call(session, "read", READ, result="v9"), ID)
    assert vote is not None and vote.count == 4
    assert sorted(vote.evidence) == [1, 2, 3, 4]


def test_changing_outcomes_never_reach_critical() -> None:
    session = rolling_guard().session("s")
    decisions = [call(session, "read", READ, result={"n": i}) for i in range(25)]
    assert set(actions(decisions[3:])) == {"warn"}


def test_pending_calls_count_for_warn_but_not_for_the_streak() -> None:
    session = rolling_guard().session("s")
    decisions = repeat(session, 12, "read", READ, PENDING)
    assert actions(decisions) == ["allow"] * 3 + ["warn"] * 9


def test_other_tools_and_other_arguments_do_not_break_the_streak() -> None:
    session = rolling_guard().session("s")
    fillers = [
        ("list", {"dir": "."}),
        ("read", {"path": "b.txt"}),
        ("grep", {"q": "x"}),
        ("read", {"path": "c.txt"}),
        ("list", {"dir": "/"}),
    ]
    for tool, args in fillers:
        assert call(session, "read", READ).action != "critical"
        call(session, tool, args, result="other")
    sixth = call(session, "read", READ)
    assert sixth.action == "critical"
    assert vote_of(sixth, ID).level == "critical"  # type: ignore[union-attr]


def test_a_different_outcome_breaks_the_streak() -> None:
    session = rolling_guard().session("s")
    for result in ["r", "r", "r", "r", "r2"]:
        call(session, "read", READ, result)
    # the streak restarts after r2: five more equal outcomes are needed
    after = repeat(session, 5, "read", READ, "r")
    assert "critical" not in actions(after)
    assert call(session, "read", READ, "r").action == "critical"


def test_errors_are_outcomes_too() -> None:
    session = rolling_guard().session("s")
    repeat(session, 5, "read", READ, error="ENOENT: no such file")
    assert call(session, "read", READ, error="ENOENT: no such file").action == "critical"


def test_another_run_id_hides_history_but_a_new_turn_does_not() -> None:
    session = rolling_guard().session("s")
    for _ in range(5):
        session.begin_turn([])
        call(session, "read", READ, run_id="r1")
    assert call(session, "read", READ, run_id="r2").action == "allow"
    assert call(session, "read", READ).action == "allow"  # no run id: its own group
    session.begin_turn([])
    assert call(session, "read", READ, run_id="r1").action == "critical"


def test_detector_switch_turns_it_off() -> None:
    session = rolling_guard(detectors={ID: {"enabled": False}}).session("s")
    decisions = repeat(session, 8, "read", READ)  # the global breaker would trip on call 9
    assert actions(decisions) == ["allow"] * 8


@pytest.mark.parametrize(("enabled", "active"), [(UNSET, False), (False, False), (True, True)])
def test_loop_detection_master_switch(enabled: object, active: bool) -> None:
    session = rolling_guard(enabled=enabled).session("s")
    decisions = repeat(session, 6, "read", READ)
    expected = ["allow"] * 3 + ["warn"] * 2 + ["critical"] if active else ["allow"] * 6
    assert actions(decisions) == expected


def test_arguments_differing_only_in_key_order_are_identical() -> None:
    session = rolling_guard().session("s")
    forms = [
        {"a": 1, "b": {"x": 1, "y": 2}},
        '{"b": {"y": 2, "x": 1}, "a": 1}',
        {"b": {"y": 2, "x": 1}, "a": 1},
    ]
    for args in forms:
        assert call(session, "read", args).action == "allow"
    assert call(session, "read", '{"a":1,"b":{"x":1,"y":2}}').action == "warn"


def test_default_volatile_fields_are_not_progress() -> None:
    session = rolling_guard().session("s")
    for i in range(5):
        call(session, "read", READ, {"content": "x", "ts": i, "meta": {"messageId": f"m{i}"}})
    assert call(session, "read", READ, {"content": "x", "ts": 99}).action == "critical"


@pytest.mark.parametrize("rule", [{"drop": ["nonce"]}, {"keep": ["content"]}])
def test_per_tool_outcome_rules_are_not_progress(rule: dict[str, list[str]]) -> None:
    session = rolling_guard(outcomes={"tools": {"read": rule}}).session("s")
    for i in range(5):
        call(session, "read", READ, {"content": "x", "nonce": i})
    assert call(session, "read", READ, {"content": "x", "nonce": 9}).action == "critical"


def test_undeclared_fields_are_progress() -> None:
    session = rolling_guard().session("s")
    decisions = [call(session, "read", READ, {"content": "x", "nonce": i}) for i in range(8)]
    assert "critical" not in actions(decisions)


def test_replacing_drop_fields_makes_ts_count_as_progress() -> None:
    session = rolling_guard(outcomes={"drop_fields": ["nonce"]}).session("s")
    decisions = [
        call(session, "read", READ, {"content": "x", "ts": i, "nonce": 1}) for i in range(8)
    ]
    assert "critical" not in actions(decisions)


def test_a_blocked_call_stays_blocked_and_escalates() -> None:
    session = rolling_guard().session("s")
    repeat(session, 5, "read", READ)
    sixth, seventh = repeat(session, 2, "read", READ)
    assert (sixth.action, sixth.escalated) == ("critical", False)
    assert (seventh.action, seventh.escalated) == ("breaker", True)
    assert vote_of(seventh, ID).level == "critical"  # type: ignore[union-attr]


def test_without_escalation_a_blocked_call_stays_critical() -> None:
    session = rolling_guard(aggregator={"escalate_criticals": 0}).session("s")
    repeat(session, 5, "read", READ)
    assert actions(repeat(session, 2, "read", READ)) == ["critical", "critical"]
    assert [e.outcome for e in session.history()[-2:]] == [b"veto", b"veto"]


def test_poll_calls_are_left_to_known_poll_no_progress() -> None:
    session = rolling_guard(detectors={"known_poll_no_progress": {"enabled": False}}).session("s")
    polls = repeat(session, 8, "command_status", {"id": 7}, {"state": "running"})
    polls += repeat(session, 8, "process", {"action": "log", "id": 7}, "tail")
    assert actions(polls) == ["allow"] * 16
    not_a_poll = repeat(session, 4, "process", {"action": "kill", "id": 7}, "ok")
    assert actions(not_a_poll) == ["allow"] * 3 + ["warn"]


@pytest.mark.parametrize("run_id", [None, "run-1"])
def test_a_long_history_counts_repeats_older_than_the_recent_calls(run_id: str | None) -> None:
    """With history_size over the 64 calls whose digests are scanned for "seen lately", the
    per-signature index still tells that a call was seen: the engine runs this repeat-only
    detector for it, and the earlier entries 70 calls apart count."""
    session = rolling_guard(loop={"history_size": 500}).session("s")
    decisions = []
    for i in range(4):
        decisions.append(call(session, "read", READ, result=f"v{i}", run_id=run_id))
        for j in range(70):
            call(session, "list", {"n": i * 100 + j}, result=f"r{j}", run_id=run_id)
    assert actions(decisions) == ["allow"] * 3 + ["warn"]
    vote = vote_of(decisions[-1], ID)
    assert vote is not None and (vote.level, vote.count) == ("warn", 3)
