"""Which detectors run (docs/detection.md): the master switch and each detector's own.

A rolling detector switched on explicitly runs with `loop_detection.enabled` unset; a false
master still stops every rolling detector; a true master runs them all unless one is off.
"""

from __future__ import annotations

from typing import Any

import pytest

import loopguard
from loopguard.config.layers import load
from loopguard.detection.detector import ROLLING

UNSET = object()
ROLLING_IDS = (
    "generic_repeat",
    "known_poll_no_progress",
    "ping_pong",
    "unknown_tool_repeat",
    "global_circuit_breaker",
)


def guard(master: Any = UNSET, **detectors: Any) -> loopguard.Guard:
    loop = {} if master is UNSET else {"loop_detection": {"enabled": master}}
    return loopguard.Guard.from_dict({"version": 1, **loop, "detectors": detectors})


def active(g: loopguard.Guard) -> set[str]:
    return {stage.detector.id for stage in g.policy().stages}


def test_the_default_rules_leave_the_rolling_switches_unset() -> None:
    data = load({"version": 1}, "mapping").data
    assert "enabled" not in data["loop_detection"]
    for name in ROLLING_IDS:
        assert "enabled" not in (data["detectors"].get(name) or {}), name
    assert not active(guard()) & set(ROLLING_IDS)


@pytest.mark.parametrize("name", ROLLING_IDS)
def test_an_explicit_switch_runs_a_rolling_detector_with_the_master_unset(name: str) -> None:
    assert active(guard(**{name: {"enabled": True}})) & set(ROLLING_IDS) == {name}


@pytest.mark.parametrize("name", ROLLING_IDS)
def test_a_false_master_turns_an_explicitly_enabled_detector_off(name: str) -> None:
    assert name not in active(guard(False, **{name: {"enabled": True}}))


def test_a_true_master_runs_every_rolling_detector_unless_its_own_switch_is_off() -> None:
    assert set(ROLLING_IDS) <= active(guard(True))
    assert active(guard(True, ping_pong={"enabled": False})) & set(ROLLING_IDS) == (
        set(ROLLING_IDS) - {"ping_pong"}
    )


def test_every_rolling_detector_is_listed_here() -> None:
    rolling = {
        e.id for e in loopguard.Guard.default().registry.entries if e.detector.gating == ROLLING
    }
    assert rolling == set(ROLLING_IDS)


def test_an_explicitly_enabled_generic_repeat_warns_with_the_master_unset() -> None:
    others = {
        e.id: {"enabled": False}
        for e in loopguard.Guard.default().registry.entries
        if e.detector.gating != ROLLING
    }
    g = loopguard.Guard.from_dict(
        {
            "version": 1,
            "loop_detection": {"warning_threshold": 3},
            "detectors": {**others, "generic_repeat": {"enabled": True}},
        }
    )
    session = g.session("s")
    session.begin_turn([{"role": "user", "content": "go"}])
    actions = []
    for i in range(4):
        actions.append(session.before_call("read", {"path": "a"}, call_id=f"c{i}").action)
        session.after_call("read", {"path": "a"}, result="same", call_id=f"c{i}")
    assert actions == ["allow", "allow", "allow", "warn"]


def test_the_openclaw_per_detector_switch_counts_as_explicit() -> None:
    g = loopguard.Guard.from_yaml("tools:\n  loopDetection:\n    detectors: {pingPong: true}\n")
    assert active(g) & set(ROLLING_IDS) == {"ping_pong"}
