"""doom_loop_exact under builtin:portfolio (SPEC §3.6 as written): the same call `threshold`
(3) times in the last `window` (6) calls of the current turn, the current call included, is
a breaker.

Arguments here are short (under the fuzzy detector's 50 characters), so only this detector
can vote.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import UNSET, actions, call, guard_from, repeat, vote_of

ID = "doom_loop_exact"
SEARCH = {"q": "x"}


def session_with(**detector: Any):  # type: ignore[no-untyped-def]
    """A session under builtin:portfolio, the pack that keeps SPEC §3.6 as written."""
    session = guard_from(extends=["builtin:portfolio"], detectors={ID: detector}).session("s")
    session.begin_turn([{"role": "user", "content": "go"}])
    return session


def test_breaker_on_the_third_identical_call_in_a_turn() -> None:
    session = session_with()
    decisions = repeat(session, 3, "search", SEARCH)
    assert actions(decisions) == ["allow", "allow", "breaker"]
    vote = vote_of(decisions[-1], ID)
    assert vote is not None and (vote.level, vote.count) == ("breaker", 3)
    assert vote.evidence == (1, 2, 3)  # the current call included
    assert session.tools_closed


def test_window_counts_the_last_six_calls_of_the_turn() -> None:
    session = session_with()
    call(session, "search", SEARCH)
    for i in range(4):
        call(session, "read", {"path": str(i)})
    # call 6: its window (calls 1-6) holds searches 1 and 6, count 2
    assert call(session, "search", SEARCH).action == "allow"
    assert call(session, "search", SEARCH).action == "allow"  # call 1 has left the window
    assert call(session, "search", SEARCH).action == "breaker"


def test_the_oldest_call_of_a_full_window_still_counts() -> None:
    session = session_with()
    call(session, "search", SEARCH)
    for i in range(3):
        call(session, "read", {"path": str(i)})
    call(session, "search", SEARCH)
    third = call(session, "search", SEARCH)  # window: calls 1-6
    assert third.action == "breaker" and vote_of(third, ID).evidence == (1, 5, 6)  # type: ignore[union-attr]


def test_same_arguments_under_another_tool_do_not_count() -> None:
    session = session_with()
    decisions = [call(session, tool, SEARCH) for tool in ("search", "lookup", "search", "find")]
    assert actions(decisions) == ["allow"] * 4


def test_other_arguments_do_not_count() -> None:
    session = session_with()
    decisions = [call(session, "search", {"q": q}) for q in "xyxzy"]
    assert actions(decisions) == ["allow"] * 5


def test_a_new_turn_hides_the_previous_turn() -> None:
    session = session_with()
    repeat(session, 2, "search", SEARCH)
    session.begin_turn([{"role": "user", "content": "again"}])
    assert actions(repeat(session, 2, "search", SEARCH)) == ["allow", "allow"]


def test_run_ids_do_not_matter_within_a_turn() -> None:
    session = session_with()
    decisions = [call(session, "search", SEARCH, run_id=r) for r in ("a", "b", None)]
    assert actions(decisions) == ["allow", "allow", "breaker"]


def test_exempt_tools_are_never_checked() -> None:
    session = session_with()
    assert actions(repeat(session, 6, "check_background_tasks", {})) == ["allow"] * 6


def test_exempt_tools_are_not_recorded() -> None:
    session = session_with()
    call(session, "search", SEARCH)
    repeat(session, 5, "check_background_tasks", {})
    call(session, "search", SEARCH)
    # if the exempt calls took window slots, call 1 would have left the window
    assert call(session, "search", SEARCH).action == "breaker"


def test_exempt_list_comes_from_the_rules() -> None:
    session = session_with(exempt=["wait"])
    assert actions(repeat(session, 4, "wait", {"s": 1})) == ["allow"] * 4
    assert repeat(session, 3, "check_background_tasks", {})[-1].action == "breaker"


def test_window_and_threshold_come_from_the_rules() -> None:
    session = session_with(window=3, threshold=2)
    assert actions(repeat(session, 2, "search", SEARCH)) == ["allow", "breaker"]
    session.begin_turn([])
    call(session, "search", SEARCH)
    call(session, "read", {"p": 1})
    call(session, "read", {"p": 2})
    assert call(session, "search", SEARCH).action == "allow"  # window 3: call 1 is out


def test_detector_switch_turns_it_off() -> None:
    session = session_with(enabled=False)
    assert actions(repeat(session, 5, "search", SEARCH)) == ["allow"] * 5


@pytest.mark.parametrize("enabled", [UNSET, False, True])
def test_on_whatever_loop_detection_enabled_says(enabled: object) -> None:
    loop = {} if enabled is UNSET else {"enabled": enabled}
    session = guard_from(loop_detection=loop).session("s")  # the default rules
    session.begin_turn([])
    assert actions(repeat(session, 3, "search", SEARCH)) == ["allow", "allow", "critical"]


def test_arguments_differing_only_in_key_order_are_identical() -> None:
    session = session_with()
    forms = [{"q": "x", "n": 5}, '{"n": 5, "q": "x"}', {"n": 5, "q": "x"}]
    assert actions([call(session, "search", f) for f in forms]) == ["allow", "allow", "breaker"]


def test_a_blocked_call_stays_blocked() -> None:
    session = session_with()
    decisions = repeat(session, 5, "search", SEARCH)
    assert actions(decisions) == ["allow", "allow", "breaker", "breaker", "breaker"]
    assert [e.outcome for e in session.history()[2:]] == [b"veto"] * 3


def test_outcomes_do_not_matter() -> None:
    session = session_with()
    decisions = [call(session, "search", SEARCH, result=f"r{i}") for i in range(3)]
    assert decisions[-1].action == "breaker"
