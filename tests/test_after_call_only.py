"""Calls a host reports only once they ran (`after_call` with no `before_call`) are checked too
(issue 22, item 20): the checks `before_call` would have run vote in that `after_call`'s
decision, so a loop of them is caught; the call ran, so its entry keeps its real outcome.
"""

from __future__ import annotations

from helpers import NO_DOOM, SMALL

import loopguard
from loopguard.session import answers


def test_identical_failing_calls_reported_after_the_fact_are_caught() -> None:
    session = loopguard.Guard.from_dict({"version": 1}).session("s")
    decisions = [session.after_call("t", {"i": 1}, error="boom: same error") for _ in range(30)]
    actions = [d.action for d in decisions]
    assert actions[:2] == ["allow", "allow"]  # used to be 30 times "allow"
    assert actions[2] != "allow" and decisions[2].phase == "after"
    assert decisions[2].detector == "doom_loop_exact"
    assert "breaker" in actions and session.tools_closed
    history = session.history()
    assert len(history) == 30 and all(entry.failed for entry in history)  # real outcomes


def test_the_rolling_detectors_see_them_too() -> None:
    rules = {"version": 1, "loop_detection": {"enabled": True, **SMALL}, "detectors": NO_DOOM}
    session = loopguard.Guard.from_dict(rules).session("s")
    actions = [session.after_call("poll", {"job": 7}, "still running").action for _ in range(6)]
    assert actions == ["allow", "allow", "allow", "warn", "warn", "critical"]


def test_calls_with_a_before_call_are_decided_as_before() -> None:
    paired = loopguard.Guard.from_dict({"version": 1}).session("p")
    befores, afters = [], []
    for _ in range(4):
        befores.append(paired.before_call("t", {"i": 1}).action)
        afters.append(paired.after_call("t", {"i": 1}, error="boom").action)
    assert befores == ["allow", "allow", "critical", "breaker"]
    assert afters == ["allow", "allow", "allow", "allow"]  # no second vote on the same call


def test_a_call_refused_as_aborted_is_only_recorded() -> None:
    session = loopguard.Guard.from_dict({"version": 1}).session("s")
    for i in range(3):
        session.begin_round()
        session.before_call("t", {"i": 1}, call_id=f"c{i}")
        session.after_call("t", {"i": 1}, error="boom", call_id=f"c{i}")
    session.begin_round()
    assert session.before_call("t", {"i": 1}, call_id="c3").action == "breaker"
    aborted = session.before_call("t", {"i": 1}, call_id="c4")
    assert aborted.action == "breaker" and answers.is_aborted(aborted)
    reported = session.after_call("t", {"i": 1}, error="boom", call_id="c4")
    assert reported.action == "allow"  # no check of it: it was refused already
    assert [e.call_id for e in session.history()][-1] == "c4"
