"""global_circuit_breaker: breaker on a no-progress streak of the threshold.

Threshold (helpers.py): 8, so eight identical calls with identical outcomes make the ninth a
breaker. generic_repeat and known_poll_no_progress are switched off here: their criticals
would block the pattern long before (the aggregator tests cover the interplay).
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import PENDING, UNSET, actions, call, repeat, rolling_guard, vote_of

ID = "global_circuit_breaker"
FETCH = {"url": "https://example.com"}
QUIET = {"generic_repeat": {"enabled": False}, "known_poll_no_progress": {"enabled": False}}


def guard(enabled: Any = True, detectors: dict[str, Any] | None = None, **blocks: Any):  # type: ignore[no-untyped-def]
    return rolling_guard(enabled=enabled, detectors={**QUIET, **(detectors or {})}, **blocks)


def test_breaker_on_the_call_after_threshold_equal_outcomes() -> None:
    session = guard().session("s")
    assert actions(repeat(session, 8, "fetch", FETCH, error="503")) == ["allow"] * 8
    ninth = call(session, "fetch", FETCH, error="503")
    vote = vote_of(ninth, ID)
    assert ninth.action == "breaker" and vote is not None
    assert (vote.level, vote.count, sorted(vote.evidence)) == ("breaker", 8, list(range(1, 9)))
    assert session.tools_closed


def test_changing_outcomes_never_trip_it() -> None:
    session = guard().session("s")
    decisions = [call(session, "fetch", FETCH, result=f"page {i}") for i in range(30)]
    assert actions(decisions) == ["allow"] * 30


def test_pending_calls_do_not_count() -> None:
    session = guard().session("s")
    assert actions(repeat(session, 12, "fetch", FETCH, PENDING)) == ["allow"] * 12


def test_other_tools_and_arguments_do_not_break_the_streak() -> None:
    session = guard().session("s")
    for i in range(8):
        call(session, "fetch", FETCH)
        call(session, "fetch", {"url": f"https://example.com/{i}"}, result="other")
        call(session, "read", {"path": str(i)}, result="other")
    assert call(session, "fetch", FETCH).action == "breaker"


def test_a_different_outcome_breaks_the_streak() -> None:
    session = guard().session("s")
    repeat(session, 7, "fetch", FETCH)
    call(session, "fetch", FETCH, result="changed")
    assert actions(repeat(session, 8, "fetch", FETCH)) == ["allow"] * 8
    assert call(session, "fetch", FETCH).action == "breaker"


def test_polls_are_covered_too() -> None:
    session = guard().session("s")
    repeat(session, 8, "command_status", {"id": 1}, {"state": "running"})
    assert call(session, "command_status", {"id": 1}, {"state": "running"}).action == "breaker"


def test_another_run_id_hides_history_but_a_new_turn_does_not() -> None:
    session = guard().session("s")
    for _ in range(8):
        session.begin_turn([])
        call(session, "fetch", FETCH, run_id="r1")
    assert call(session, "fetch", FETCH, run_id="r2").action == "allow"
    assert call(session, "fetch", FETCH).action == "allow"
    session.begin_turn([])
    assert call(session, "fetch", FETCH, run_id="r1").action == "breaker"


def test_detector_switch_turns_it_off() -> None:
    session = guard(detectors={ID: {"enabled": False}}).session("s")
    assert actions(repeat(session, 12, "fetch", FETCH)) == ["allow"] * 12


@pytest.mark.parametrize(("enabled", "active"), [(UNSET, False), (False, False), (True, True)])
def test_loop_detection_master_switch(enabled: object, active: bool) -> None:
    session = guard(enabled=enabled).session("s")
    assert (repeat(session, 9, "fetch", FETCH)[-1].action == "breaker") is active


def test_arguments_differing_only_in_key_order_are_identical() -> None:
    session = guard().session("s")
    forms = [
        {"url": "u", "headers": {"a": "1", "b": "2"}},
        '{"headers": {"b": "2", "a": "1"}, "url": "u"}',
    ]
    for i in range(8):
        call(session, "fetch", forms[i % 2])
    assert call(session, "fetch", {"headers": {"b": "2", "a": "1"}, "url": "u"}).action == "breaker"


def test_volatile_fields_are_not_progress() -> None:
    outcomes = {"tools": {"fetch": {"drop": ["served_by"]}}}
    session = guard(outcomes=outcomes).session("s")
    for i in range(8):
        call(session, "fetch", FETCH, {"status": 503, "requestId": i, "served_by": f"node{i}"})
    assert call(session, "fetch", FETCH, {"status": 503}).action == "breaker"


def test_a_tripped_pattern_stays_tripped() -> None:
    session = guard().session("s")
    repeat(session, 8, "fetch", FETCH)
    ninth, tenth = repeat(session, 2, "fetch", FETCH)
    assert (ninth.action, tenth.action) == ("breaker", "breaker")
    assert vote_of(tenth, ID).count >= 8  # type: ignore[union-attr]
    session.begin_turn([])  # a new turn does not reset a rolling detector
    assert call(session, "fetch", FETCH).action == "breaker"
