"""The benchmark's standard traces, decided by the engine: no detector faults, the right votes."""

from __future__ import annotations

import collections
import sys
from pathlib import Path
from typing import Any

import pytest

import loopguard

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import traces  # noqa: E402

sys.path.pop(0)

RULES = {"default": {"version": 1}, "all on": {"version": 1, "loop_detection": {"enabled": True}}}


def decide(rules: dict[str, Any], name: str) -> collections.Counter[tuple[str, str | None]]:
    session = loopguard.Guard.from_dict(rules).session(name)
    seen: collections.Counter[tuple[str, str | None]] = collections.Counter()
    for i, call in enumerate(traces.load(name, 0.05)):
        if i % 10 == 0:
            session.begin_turn([])
        for decision in (
            session.before_call(call["tool"], call["args"], call_id=str(i)),
            session.after_call(call["tool"], call["args"], result=call["result"], call_id=str(i)),
        ):
            assert decision.faults == (), decision.faults
            seen[(decision.action, decision.detector)] += 1
    return seen


@pytest.mark.parametrize("rules", RULES)
@pytest.mark.parametrize("name", traces.NAMES)
def test_no_detector_fails_on_a_standard_trace(rules: str, name: str) -> None:
    decide(RULES[rules], name)


def test_healthy_traces_are_allowed() -> None:
    for name in ("distinct", "mixed"):
        for rules in RULES.values():
            assert set(decide(rules, name)) == {("allow", None)}


@pytest.mark.parametrize(
    ("name", "detector"),
    [("repeat", "doom_loop_exact"), ("ping_pong", "cycle"), ("big_args", "doom_loop_fuzzy")],
)
def test_loop_traces_are_blocked_then_stopped_by_the_default_rules(
    name: str, detector: str
) -> None:
    seen = decide(RULES["default"], name)
    assert seen[("critical", detector)] == 1  # the first detection blocks with a message …
    assert seen[("breaker", detector)] > 0  # … and the model persisting is stopped
    assert {action for action, _ in seen} == {"allow", "critical", "breaker"}


def test_near_duplicate_big_writes_trip_the_fuzzy_detector() -> None:
    seen = decide(RULES["default"], "big_args")
    # each 10-call turn: two writes pass, the third near-duplicate trips the breaker
    assert seen[("breaker", "doom_loop_fuzzy")] > 0
    assert seen[("allow", None)] > 0
