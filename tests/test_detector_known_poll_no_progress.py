"""known_poll_no_progress: polls whose output never changes.

Thresholds (helpers.py): warning 3, critical 5. The streak counts earlier completed polls with
the same arguments and the same outcome, so call N+1 is the first flagged.
"""

from __future__ import annotations

import pytest
from helpers import PENDING, UNSET, actions, call, repeat, rolling_guard, vote_of

ID = "known_poll_no_progress"
POLL = {"id": 7}
RUNNING = {"state": "running"}


def test_warn_on_the_call_after_warning_threshold() -> None:
    session = rolling_guard().session("s")
    assert actions(repeat(session, 3, "command_status", POLL, RUNNING)) == ["allow"] * 3
    fourth = call(session, "command_status", POLL, RUNNING)
    vote = vote_of(fourth, ID)
    assert fourth.action == "warn" and vote is not None
    assert (vote.level, vote.count, sorted(vote.evidence)) == ("warn", 3, [1, 2, 3])


def test_critical_on_the_call_after_critical_threshold() -> None:
    session = rolling_guard().session("s")
    decisions = repeat(session, 6, "command_status", POLL, RUNNING)
    assert actions(decisions) == ["allow"] * 3 + ["warn", "warn", "critical"]
    vote = vote_of(decisions[-1], ID)
    assert vote is not None and (vote.level, vote.count) == ("critical", 5)


def test_a_poll_whose_output_changes_is_never_flagged() -> None:
    session = rolling_guard().session("s")
    decisions = [
        call(session, "command_status", POLL, {"state": "running", "progress": i})
        for i in range(25)
    ]
    assert actions(decisions) == ["allow"] * 25


def test_pending_polls_are_skipped() -> None:
    session = rolling_guard().session("s")
    assert actions(repeat(session, 10, "command_status", POLL, PENDING)) == ["allow"] * 10


def test_other_tools_and_arguments_do_not_break_the_streak() -> None:
    session = rolling_guard().session("s")
    for filler in ("read", "command_status"):
        call(session, "command_status", POLL, RUNNING)
        call(session, filler, {"id": 8}, {"state": "done"})
    call(session, "command_status", POLL, RUNNING)
    fourth = call(session, "command_status", POLL, RUNNING)
    assert vote_of(fourth, ID) is not None and fourth.action == "warn"


def test_a_different_outcome_breaks_the_streak() -> None:
    session = rolling_guard().session("s")
    for state in ("running", "running", "running", "done"):
        call(session, "command_status", POLL, {"state": state})
    assert vote_of(call(session, "command_status", POLL, RUNNING), ID) is None
    repeat(session, 2, "command_status", POLL, RUNNING)
    assert vote_of(call(session, "command_status", POLL, RUNNING), ID) is not None


def test_repeated_errors_are_no_progress() -> None:
    session = rolling_guard().session("s")
    repeat(session, 3, "command_status", POLL, error="connection refused")
    assert call(session, "command_status", POLL, error="connection refused").action == "warn"


@pytest.mark.parametrize("args", [{"action": "poll", "id": 1}, {"action": "log", "id": 1}])
def test_process_poll_and_log_are_polls(args: dict[str, object]) -> None:
    session = rolling_guard().session("s")
    repeat(session, 3, "process", args, "same output")
    assert vote_of(call(session, "process", args, "same output"), ID) is not None


def test_process_with_another_action_is_not_a_poll() -> None:
    session = rolling_guard().session("s")
    args = {"action": "kill", "id": 1}
    decisions = repeat(session, 6, "process", args, "same output")
    assert all(vote_of(d, ID) is None for d in decisions)
    assert vote_of(decisions[-1], "generic_repeat") is not None


def test_poll_tools_come_from_the_rules() -> None:
    rules = {ID: {"poll_tools": [{"tool": "job_status"}]}}
    session = rolling_guard(detectors=rules).session("s")
    repeat(session, 3, "job_status", POLL, RUNNING)
    assert vote_of(call(session, "job_status", POLL, RUNNING), ID) is not None
    other = rolling_guard(detectors=rules).session("t")
    decisions = repeat(other, 4, "command_status", POLL, RUNNING)  # no longer a declared poll
    assert all(vote_of(d, ID) is None for d in decisions)


def test_another_run_id_hides_history_but_a_new_turn_does_not() -> None:
    session = rolling_guard().session("s")
    for _ in range(3):
        session.begin_turn([])
        call(session, "command_status", POLL, RUNNING, run_id="r1")
    assert call(session, "command_status", POLL, RUNNING, run_id="r2").action == "allow"
    session.begin_turn([])
    assert call(session, "command_status", POLL, RUNNING, run_id="r1").action == "warn"


def test_detector_switch_turns_it_off() -> None:
    session = rolling_guard(detectors={ID: {"enabled": False}}).session("s")
    assert actions(repeat(session, 8, "command_status", POLL, RUNNING)) == ["allow"] * 8


@pytest.mark.parametrize(("enabled", "active"), [(UNSET, False), (False, False), (True, True)])
def test_loop_detection_master_switch(enabled: object, active: bool) -> None:
    session = rolling_guard(enabled=enabled).session("s")
    decisions = repeat(session, 4, "command_status", POLL, RUNNING)
    assert (vote_of(decisions[-1], ID) is not None) is active


def test_arguments_differing_only_in_key_order_are_identical() -> None:
    session = rolling_guard().session("s")
    for args in ({"id": 7, "tail": 5}, '{"tail": 5, "id": 7}', {"tail": 5, "id": 7}):
        call(session, "command_status", args, RUNNING)
    assert call(session, "command_status", '{"id":7,"tail":5}', RUNNING).action == "warn"


def test_default_volatile_fields_are_not_progress() -> None:
    session = rolling_guard().session("s")
    for i in range(5):
        call(
            session,
            "command_status",
            POLL,
            {"state": "running", "ts": i, "durationMs": 10 * i, "pid": 100 + i},
        )
    last = call(session, "command_status", POLL, '{"state": "running", "ts": 77}')
    assert last.action == "critical"


def test_per_tool_keep_rule_is_not_progress() -> None:
    outcomes = {"tools": {"command_status": {"keep": ["state"]}}}
    session = rolling_guard(outcomes=outcomes).session("s")
    for i in range(3):
        call(session, "command_status", POLL, {"state": "running", "tail": f"line {i}"})
    assert call(session, "command_status", POLL, RUNNING).action == "warn"


def test_a_blocked_poll_stays_blocked_and_escalates() -> None:
    session = rolling_guard().session("s")
    repeat(session, 5, "command_status", POLL, RUNNING)
    sixth, seventh = repeat(session, 2, "command_status", POLL, RUNNING)
    assert sixth.action == "critical"
    assert (seventh.action, seventh.escalated) == ("breaker", True)


def test_without_escalation_a_blocked_poll_stays_critical() -> None:
    session = rolling_guard(aggregator={"escalate_criticals": 0}).session("s")
    repeat(session, 5, "command_status", POLL, RUNNING)
    later = repeat(session, 2, "command_status", POLL, RUNNING)
    assert actions(later) == ["critical", "critical"]
    assert all(vote_of(d, ID).level == "critical" for d in later)  # type: ignore[union-attr]
