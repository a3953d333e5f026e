"""post_compaction_guard: after `session.compacted()`, the next `window_size` (3)
completed calls are observed; a breaker (code `compaction_loop_persisted`) fires on the last
observation only, and only if all of them are the same (tool, arguments, outcome).

The doom-loop and cycle detectors are off here, so only this detector votes.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import NO_DOOM, UNSET, guard_from, vote_of

import loopguard

ID = "post_compaction_guard"
BUILD = {"target": "all"}


def session_with(enabled: Any = UNSET, **blocks: Any) -> loopguard.Session:
    loop = dict(blocks.pop("loop_detection", {}))
    if enabled is not UNSET:
        loop["enabled"] = enabled
    detectors = {**NO_DOOM, **blocks.pop("detectors", {})}
    return guard_from(loop_detection=loop, detectors=detectors, **blocks).session("s")


def done(
    session: loopguard.Session,
    tool: str = "build",
    args: Any = BUILD,
    result: Any = None,
    error: Any = "exit 2: missing header",
) -> loopguard.Decision:
    """One completed call in a new turn; returns the after_call decision."""
    session.begin_turn([])
    before = session.before_call(tool, args, call_id=f"c{session.turn}")
    assert before.action == "allow"
    return session.after_call(
        tool, args, result=result, error=None if result else error, call_id=f"c{session.turn}"
    )


def test_fires_on_the_last_observation_of_the_window() -> None:
    session = session_with()
    session.compacted()
    first = [done(session) for _ in range(2)]
    assert [d.action for d in first] == ["allow", "allow"]
    third = done(session)
    vote = vote_of(third, ID)
    assert third.action == "breaker" and third.phase == "after" and vote is not None
    assert (vote.code, vote.count) == ("compaction_loop_persisted", 3)
    assert "build" in vote.message and "3" in vote.message
    assert third.message is not None and session.tools_closed


def test_not_armed_without_a_compaction() -> None:
    session = session_with()
    assert {done(session).action for _ in range(6)} == {"allow"}


def test_changing_outcomes_never_fire() -> None:
    session = session_with()
    session.compacted()
    decisions = [done(session, error=f"exit {i}") for i in range(3)]
    assert [d.action for d in decisions] == ["allow"] * 3


@pytest.mark.parametrize("middle", [("test", BUILD), ("build", {"target": "lib"})])
def test_a_different_call_in_the_window_does_not_fire(middle: tuple[str, Any]) -> None:
    session = session_with()
    session.compacted()
    decisions = [done(session), done(session, *middle), done(session)]
    assert [d.action for d in decisions] == ["allow"] * 3


def test_disarms_after_the_window_whatever_happened() -> None:
    session = session_with()
    session.compacted()
    for i in range(3):
        done(session, error=f"exit {i}")
    assert {done(session).action for _ in range(4)} == {"allow"}


def test_disarms_after_firing() -> None:
    session = session_with()
    session.compacted()
    assert [done(session).action for _ in range(4)] == ["allow", "allow", "breaker", "allow"]


def test_arming_again_clears_the_window() -> None:
    session = session_with()
    session.compacted()
    done(session)
    done(session)
    session.compacted()
    assert [done(session).action for _ in range(3)] == ["allow", "allow", "breaker"]


def test_pending_calls_are_not_observations() -> None:
    session = session_with()
    session.compacted()
    done(session)
    session.before_call("build", BUILD, call_id="never-answered")
    done(session)
    assert done(session).action == "breaker"


def test_window_size_comes_from_the_rules() -> None:
    session = session_with(loop_detection={"post_compaction_guard": {"window_size": 2}})
    session.compacted()
    assert [done(session).action for _ in range(2)] == ["allow", "breaker"]


@pytest.mark.parametrize(("enabled", "active"), [(UNSET, True), (True, True), (False, False)])
def test_loop_detection_master_switch(enabled: object, active: bool) -> None:
    session = session_with(enabled)
    session.compacted()
    assert ([done(session).action for _ in range(3)][-1] == "breaker") is active


def test_detector_switch_turns_it_off() -> None:
    session = session_with(True, detectors={ID: {"enabled": False}})
    session.compacted()
    assert {done(session).action for _ in range(3)} == {"allow"}


def test_arguments_differing_only_in_key_order_are_identical() -> None:
    session = session_with()
    session.compacted()
    forms = [
        {"target": "all", "jobs": 4},
        '{"jobs": 4, "target": "all"}',
        {"jobs": 4, "target": "all"},
    ]
    assert [done(session, args=f).action for f in forms] == ["allow", "allow", "breaker"]


def test_volatile_result_fields_are_not_progress() -> None:
    session = session_with(outcomes={"tools": {"build": {"keep": ["status"]}}})
    session.compacted()
    results = [{"status": "failed", "ts": i, "log": f"attempt {i}"} for i in range(3)]
    assert [done(session, result=r).action for r in results] == ["allow", "allow", "breaker"]


def test_the_window_spans_turns() -> None:
    session = session_with()
    session.compacted()
    done(session)  # each call in its own turn: a compaction retry is not bound to one turn
    done(session)
    assert session.turn == 2 and done(session).action == "breaker"


def test_a_new_turn_reopens_tools_after_the_breaker() -> None:
    session = session_with()
    session.compacted()
    for _ in range(3):
        done(session)
    assert session.tools_closed
    session.begin_turn([])
    assert not session.tools_closed
