"""doom_loop_exact takes a blocked repeat's verdict over from the walk before it (`_again`):
a blocked loop costs a step, not the window. Taking over must decide exactly what a fresh
walk decides, on any session: repeats, ping-pongs, look-ups and edits between, failures,
polls, results coming in late, batches, several runs, new turns with and without a user
message that reports a change, `scope: turn`, exempt tools.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopguard
from loopguard.detectors import doom_loop_exact

CALLS = [
    ("run_tests", {"path": "tests/"}),
    ("read_file", {"path": "a.py"}),
    ("list_dir", {"path": "."}),
    ("bash", {"command": "pytest -x"}),
    ("bash", {"command": "pytest -x", "description": "again"}),
    ("write_file", {"path": "a.py", "content": "x = 1"}),
    ("check_status", {"id": "build"}),
    ("check_background_tasks", {}),
]
RESULTS = ["ok", "FAILED test_x", "error: no such file or directory", "running 40%", "done"]
USER_TEXTS = ["go on", "I fixed the file, try again", "why?"]


@st.composite
def sessions(draw: st.DrawFn) -> list[tuple[str, int, int]]:
    """Steps over a few calls and results (so that loops form), with the odd event between."""
    calls = draw(st.lists(st.integers(0, len(CALLS) - 1), min_size=1, max_size=3))
    results = draw(st.lists(st.integers(0, len(RESULTS) - 1), min_size=1, max_size=2))
    kinds = st.sampled_from(["call"] * 8 + ["loop", "late", "batch", "turn", "run"])
    steps: list[tuple[str, int, int]] = []
    for kind in draw(st.lists(kinds, max_size=60)):
        if kind == "loop":  # the calls in turn, again and again, each with one result
            result = draw(st.sampled_from(results))
            steps.extend(("call", c, result) for c in calls * draw(st.integers(2, 15)))
        elif kind == "turn":
            steps.append((kind, draw(st.integers(0, len(USER_TEXTS) - 1)), 0))
        elif kind == "run":
            steps.append((kind, draw(st.integers(0, 1)), 0))
        else:
            steps.append((kind, draw(st.sampled_from(calls)), draw(st.sampled_from(results))))
    return steps


RULES = [
    {"version": 1},
    {"version": 1, "loop_detection": {"enabled": True}},
    {"version": 1, "detectors": {"doom_loop_exact": {"scope": "turn", "window": 8}}},
    {"version": 1, "detectors": {"doom_loop_exact": {"window": 5, "threshold": 2}}},
]


def run(rules: dict[str, Any], steps: list[tuple[str, int, int]]) -> list[Any]:
    """Every decision of a session driven by `steps`, in a comparable form."""
    session = loopguard.Guard.from_dict(rules).session("s")
    session.begin_turn("start")
    out: list[Any] = []
    run_id = None
    pending: list[tuple[str, dict[str, Any], str, str]] = []
    for i, (kind, a, b) in enumerate(steps):
        if kind == "turn":
            session.begin_turn(USER_TEXTS[a])
            continue
        if kind == "run":
            run_id = f"r{a}"
            continue
        tool, args = CALLS[a]
        ids = [f"c{i}"] if kind != "batch" else [f"c{i}a", f"c{i}b"]
        if kind == "batch":
            session.begin_round()
        for cid in ids:
            out.append(session.before_call(tool, args, call_id=cid, run_id=run_id))
        if kind == "batch":
            session.end_round()
        for cid in ids:
            if kind == "late":  # its result comes in after the next call's check
                pending.append((tool, args, RESULTS[b], cid))
                continue
            out.append(
                session.after_call(tool, args, result=RESULTS[b], call_id=cid, run_id=run_id)
            )
        if kind != "late":
            while pending:
                tool_, args_, result, cid = pending.pop(0)
                out.append(
                    session.after_call(tool_, args_, result=result, call_id=cid, run_id=run_id)
                )
    return [
        (
            d.action,
            d.detector,
            d.message,
            [(v.detector, v.level, v.count, v.message) for v in d.votes],
        )
        for d in out
    ]


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(rules=st.sampled_from(range(len(RULES))), steps=sessions())
def test_taking_a_verdict_over_decides_as_a_fresh_walk(
    rules: int, steps: list[tuple[str, int, int]]
) -> None:
    taken = run(RULES[rules], steps)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(doom_loop_exact, "remember", lambda *a, **k: None)  # always walk
        walked = run(RULES[rules], steps)
    assert taken == walked


def test_a_blocked_repeat_and_a_blocked_ping_pong_take_the_verdict_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The loops the take-over is for do take it (else it would cost without paying)."""
    walks = []
    walk = doom_loop_exact.DoomLoopExact._walk

    def counting(self: Any, *args: Any) -> Any:
        walks.append(args[0].seq)
        return walk(self, *args)

    monkeypatch.setattr(doom_loop_exact.DoomLoopExact, "_walk", counting)
    for calls in ([0], [1, 2]):  # a failing test run again and again; two reads in turn
        walks.clear()
        steps = [("call", calls[i % len(calls)], 1) for i in range(40)]
        decisions = run({"version": 1}, steps)
        assert sum(d[0] in ("critical", "breaker") for d in decisions) > 20
        assert len(walks) < 12, walks  # the first few, and after the window ran out


def test_a_result_coming_in_forgets_every_verdict_taken_over() -> None:
    """A result can change what a walk read (a failure turns a change into a look-up, a repeat
    gives its first occurrence a verdict): the next walk is taken afresh."""
    session = loopguard.Guard.from_dict({"version": 1}).session("s")
    session.begin_turn("start")
    for i in range(6):
        decision = session.before_call("run_tests", {"path": "t"}, call_id=f"c{i}")
        session.after_call("run_tests", {"path": "t"}, result="FAILED test_x", call_id=f"c{i}")
    assert decision.action == "breaker"
    trail = session._state.scratch["doom_loop_exact"]
    assert trail.again  # the blocked repeats took their verdicts over
    session.before_call("read_file", {"path": "a.py"}, call_id="r")
    assert trail.again  # a call checked changes nothing it read …
    session.after_call("read_file", {"path": "a.py"}, result="x = 1", call_id="r")
    assert trail.again is None  # … its result may
