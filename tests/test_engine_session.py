"""The Session API: per-agent overrides, threshold repair, the capped history and its entries.

See docs/rules.md ("Annotated example", "Threshold repair") and docs/detection.md.
"""

from __future__ import annotations

from typing import Any

from helpers import (
    NO_DOOM,
    SMALL,
    SPEC_DOOM,
    actions,
    call,
    guard_from,
    repeat,
    rolling_guard,
    vote_of,
)

import loopguard
import loopguard.rules
from loopguard.detectors.doom_loop_exact import DoomLoopExact

READ = {"path": "a"}


def agents_guard(**agents: Any) -> loopguard.Guard:
    return guard_from(loop_detection={**SMALL, "enabled": True}, detectors=NO_DOOM, agents=agents)


def loop_config(session: loopguard.Session) -> tuple[int, int, int]:
    block = session.config["loop_detection"]
    return (
        block["warning_threshold"],
        block["critical_threshold"],
        block["global_circuit_breaker_threshold"],
    )


# -- per-agent overrides -----------------------------------------------------------------
def test_an_agent_override_changes_that_agent_only() -> None:
    guard = agents_guard(strict={"loop_detection": {"warning_threshold": 2}})
    strict, plain = guard.session("s", agent="strict"), guard.session("s")
    assert actions(repeat(strict, 3, "read", READ)) == ["allow", "allow", "warn"]
    assert actions(repeat(plain, 3, "read", READ)) == ["allow"] * 3
    assert (
        guard.session("t", agent="nobody-configured").config["loop_detection"]["warning_threshold"]
        == 3
    )


def test_an_agent_can_switch_loop_detection_off() -> None:
    guard = agents_guard(quiet={"loop_detection": {"enabled": False}})
    decisions = repeat(guard.session("s", agent="quiet"), 8, "read", READ)
    assert actions(decisions) == ["allow"] * 8


def test_an_agent_turns_rolling_detection_on_over_an_unset_global() -> None:
    guard = guard_from(
        detectors=NO_DOOM, agents={"safe-runner": {"loop_detection": {"enabled": True, **SMALL}}}
    )
    assert actions(repeat(guard.session("s"), 6, "read", READ)) == ["allow"] * 6
    runner = guard.session("s", agent="safe-runner")
    assert actions(repeat(runner, 6, "read", READ))[-1] == "critical"


def test_nested_agent_blocks_merge_key_by_key() -> None:
    guard = guard_from(agents={"patient": {"detectors": {"doom_loop_exact": {"threshold": 5}}}})
    session = guard.session("s", agent="patient")
    exact = session.config["detectors"]["doom_loop_exact"]
    # the override is merged into the defaults key by key: the other options keep theirs
    assert (exact["threshold"], exact["window"], exact["exempt"]) == (
        5,
        DoomLoopExact.option_defaults()["window"],
        ["check_background_tasks"],
    )
    session.begin_turn([])
    assert actions(repeat(session, 5, "search", {"q": 1})) == ["allow"] * 4 + ["critical"]


# -- threshold repair --------------------------------------------------------------------
def test_repair_raises_critical_then_breaker_above_an_agent_warning() -> None:
    guard = agents_guard(
        late={"loop_detection": {"warning_threshold": 6}},
        later={"loop_detection": {"warning_threshold": 9}},
    )
    late = guard.session("s", agent="late")
    assert loop_config(late) == (6, 7, 8)
    assert loop_config(guard.session("s", agent="later")) == (9, 10, 11)
    decisions = repeat(late, 8, "read", READ)
    assert actions(decisions) == ["allow"] * 6 + ["warn", "critical"]  # streak 7 = critical 7


def test_repair_never_lowers_warning() -> None:
    guard = agents_guard(low={"loop_detection": {"critical_threshold": 2}})
    session = guard.session("s", agent="low")
    assert loop_config(session) == (3, 4, 8)
    assert actions(repeat(session, 5, "read", READ)) == ["allow"] * 3 + ["warn", "critical"]


def test_repair_raises_the_breaker_above_critical() -> None:
    quiet = {"generic_repeat": {"enabled": False}}
    guard = agents_guard(
        tight={"loop_detection": {"global_circuit_breaker_threshold": 4}, "detectors": quiet}
    )
    session = guard.session("s", agent="tight")
    assert loop_config(session) == (3, 5, 6)
    assert actions(repeat(session, 7, "read", READ)) == ["allow"] * 6 + ["breaker"]


def test_repair_of_a_merged_global_block() -> None:
    session = guard_from(loop_detection={"warning_threshold": 25}).session("s")
    assert loop_config(session) == (25, 26, 30)


# -- history -----------------------------------------------------------------------------
def test_history_is_capped_at_history_size_and_detectors_see_only_it() -> None:
    session = rolling_guard(loop={"history_size": 3}).session("s")
    decisions = repeat(session, 9, "read", READ)
    assert [e.seq for e in session.history()] == [7, 8, 9]
    assert actions(decisions) == ["allow"] * 3 + ["warn"] * 6  # streak never exceeds 3


def test_history_entries_hold_what_spec_lists() -> None:
    session = guard_from().session("s")
    session.begin_turn([])
    session.before_call("read", {"path": "a"}, call_id="c1", run_id="r1")
    session.after_call("read", {"path": "a"}, result={"text": "hi"}, call_id="c1", run_id="r1")
    session.before_call("read", {"path": "b"}, call_id="c2")
    done, pending = session.history()
    assert (done.seq, done.tool, done.run_id, done.turn, done.call_id) == (1, "read", "r1", 1, "c1")
    assert len(done.digest) == 16 and done.outcome is not None and not done.pending
    assert pending.pending and pending.outcome is None and pending.run_id is None
    data = done.to_dict()
    assert set(data) >= {"seq", "tool", "args_digest", "outcome", "run_id", "turn", "call_id"}
    assert data["args_digest"] == done.digest.hex()


def test_after_call_without_before_call_is_recorded() -> None:
    session = guard_from().session("s")
    decision = session.after_call("read", {"path": "a"}, result="x", call_id="late")
    assert decision.action == "allow" and decision.phase == "after"
    (entry,) = session.history()
    assert (entry.seq, entry.call_id, entry.pending) == (1, "late", False)


def test_a_blocked_call_is_recorded_as_a_veto_and_keeps_it() -> None:
    session = guard_from().session("s")
    session.begin_turn([])
    repeat(session, 2, "search", {"q": 1})
    assert call(session, "search", {"q": 1}, call_id="third").blocked
    # a host that ran it regardless: the veto stays its outcome
    after = session.after_call("search", {"q": 1}, result="ran anyway", call_id="third")
    assert after.action == "allow"
    assert len(session.history()) == 3 and session.history()[-1].outcome == b"veto"


def test_sessions_with_the_same_id_share_state() -> None:
    guard = rolling_guard()
    for _ in range(3):
        call(guard.session("shared"), "read", READ)
    decision = call(guard.session("shared"), "read", READ)
    assert vote_of(decision, "generic_repeat") is not None
    assert call(guard.session("other"), "read", READ).action == "allow"


def test_after_call_without_ids_pairs_parallel_calls_by_arguments() -> None:
    session = loopguard.Guard.default().session("pairs")
    session.begin_turn([])
    session.before_call("read", {"path": "a"})
    session.before_call("read", {"path": "b"})
    session.after_call("read", {"path": "b"}, result="B")  # answered out of order
    entries = {e.seq: e for e in session.history()}
    assert entries[1].outcome is None and entries[2].outcome is not None
    session.after_call("read", {"path": "a"}, result="A")
    assert all(e.outcome is not None for e in session.history())
    assert len(session.history()) == 2


def test_without_ids_a_result_pairs_with_the_call_that_ran_not_a_blocked_one() -> None:
    session = guard_from(detectors={"doom_loop_exact": SPEC_DOOM}).session("veto-pairs")
    session.begin_turn([])
    for _ in range(2):
        session.before_call("search", {"q": "x"})
        session.after_call("search", {"q": "x"}, result="none")
    assert session.before_call("search", {"q": "x"}).action == "breaker"  # never reported
    session.begin_turn([])  # a new turn: the doom-loop window starts afresh
    assert session.before_call("search", {"q": "x"}).action == "allow"
    session.after_call("search", {"q": "x"}, result="found")
    outcomes = {e.seq: e.to_dict()["outcome"] for e in session.history()}
    assert outcomes[3] == "veto"
    assert outcomes[4] is not None and outcomes[4].startswith("ok:")


def test_open_calls_stay_bounded_when_results_never_come() -> None:
    session = loopguard.Guard.from_dict(
        {"version": 1, "detectors": {"doom_loop_exact": {"enabled": False}}}
    ).session("leak")
    for i in range(2000):
        session.before_call("poll", {"i": i})  # same key (no call id), never answered
    opened = session._state.scratch["_open"]
    assert sum(len(v) for v in opened.values()) <= 256


def test_agents_without_overrides_share_the_global_policy() -> None:
    guard = loopguard.Guard.from_dict(
        {"version": 1, "agents": {"safe-runner": {"loop_detection": {"enabled": True}}}}
    )
    assert guard.policy("someone-else") is guard.policy(None)
    assert guard.policy("safe-runner") is not guard.policy(None)
    for i in range(50):
        guard.session("s", agent=f"user-{i}")
    assert len(guard._policies) <= 2
