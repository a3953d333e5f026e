"""A plugin detector has a time budget and a size limit (issue 22, item 13): a hook that
overruns is reported and then skipped for the rest of the process, instead of adding its time
to every call, and an options schema too large to check is refused at registration at once.

The budget is lowered for these tests (`quick_budget`), so they sleep a few hundredths of a
second, not the real 0.1 s / 1 s.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

import loopguard
from loopguard.detection import sandbox
from loopguard.detection.plugins import (
    MAX_SCHEMA_VALUES,
    Registered,
    Registry,
    detector_problem,
    load_registry,
)

SLOW, STOP = 0.02, 0.15


@pytest.fixture
def quick_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "SLOW_S", SLOW)
    monkeypatch.setattr(sandbox, "STOP_S", STOP)


class Sleeper(loopguard.Detector):
    id = "sleeper"
    levels = ("warn",)

    def __init__(self, seconds: float, hook: str = "check") -> None:
        self.seconds, self.hook, self.calls = seconds, hook, 0

    def check(self, call: Any, state: Any, cfg: Any) -> Any:
        return self._run("check")

    def after(self, call: Any, state: Any, cfg: Any) -> Any:
        return self._run("after")

    def _run(self, hook: str) -> Any:
        if hook != self.hook:
            return None
        self.calls += 1
        time.sleep(self.seconds)
        return self.vote("warn", self.calls, "k", "slow but here")


def registry_with(detector: loopguard.Detector) -> Registry:
    base = load_registry()
    entry = Registered(detector, "lgfake[sleeper]", False)
    return Registry((*base.entries, entry), (), base.plugin_manager)


def guard(registry: Registry, **blocks: Any) -> loopguard.Guard:
    return loopguard.Guard.from_dict({"version": 1, **blocks}, registry=registry)


def timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return value, time.perf_counter() - start


@pytest.mark.usefixtures("quick_budget")
def test_a_check_far_over_budget_is_disabled_for_the_process() -> None:
    sleeper = Sleeper(STOP + 0.05)
    registry = registry_with(sleeper)
    session = guard(registry).session("a")
    first = session.before_call("read", {"path": "a"})
    assert first.votes == () and len(first.faults) == 1
    assert first.faults[0].startswith("lgfake[sleeper]: Disabled: disabled for this process")
    second, took = timed(session.before_call, "read", {"path": "b"})
    assert took < STOP and sleeper.calls == 1  # skipped, not run again
    assert second.faults and "Disabled" in second.faults[0]
    # another guard built from the same registry (every guard of the process) skips it too
    other, took = timed(guard(registry).session("b").before_call, "read", {"path": "c"})
    assert took < STOP and sleeper.calls == 1 and other.action == "allow"


@pytest.mark.usefixtures("quick_budget")
def test_repeated_overruns_are_logged_then_disabled(caplog: pytest.LogCaptureFixture) -> None:
    sleeper = Sleeper(SLOW * 2)
    session = guard(registry_with(sleeper)).session("a")
    with caplog.at_level(logging.WARNING, "loopguard"):
        decisions = [session.before_call("read", {"path": str(i)}) for i in range(5)]
    assert [d.action for d in decisions[:2]] == ["warn", "warn"]  # its votes still count
    assert [bool(d.faults) for d in decisions] == [False, False, True, True, True]
    assert sleeper.calls == sandbox.MAX_OVERRUNS
    assert caplog.text.count("over its") == sandbox.MAX_OVERRUNS - 1


@pytest.mark.usefixtures("quick_budget")
def test_a_disabled_detector_follows_fail_mode_closed() -> None:
    session = guard(registry_with(Sleeper(STOP + 0.05)), aggregator={"fail_mode": "closed"})
    decision = session.session("a").before_call("read", {"path": "a"})
    assert decision.action == "critical" and decision.votes[0].code == "detector_fault"


@pytest.mark.usefixtures("quick_budget")
def test_an_after_hook_has_the_same_budget() -> None:
    sleeper = Sleeper(STOP + 0.05, hook="after")
    session = guard(registry_with(sleeper)).session("a")
    session.before_call("read", {"path": "a"})
    first = session.after_call("read", {"path": "a"}, "x")
    assert first.faults and "Disabled" in first.faults[0]
    session.before_call("read", {"path": "b"})
    _, took = timed(session.after_call, "read", {"path": "b"}, "y")
    assert took < STOP and sleeper.calls == 1


def test_a_quick_plugin_is_never_disabled() -> None:
    sleeper = Sleeper(0.0)
    session = guard(registry_with(sleeper)).session("a")
    decisions = [session.before_call("read", {"path": str(i)}) for i in range(20)]
    assert all(d.faults == () and d.detector == "sleeper" for d in decisions)


# -- the options schema ----------------------------------------------------------------------
class Declares(loopguard.Detector):
    id = "declares"
    levels = ("warn",)

    def __init__(self, schema: Any) -> None:
        self.options_schema = schema  # type: ignore[misc]


def _properties(count: int) -> dict[str, Any]:
    return {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(count)}}


def _deep(levels: int, innermost: Any = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"} if innermost is None else innermost
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


def _cyclic() -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["self"] = schema
    return schema


@pytest.mark.parametrize(
    "schema, problem",
    [
        (_properties(100_000), f"more than {MAX_SCHEMA_VALUES:,} values"),
        (_properties(5_000), f"more than {MAX_SCHEMA_VALUES:,} values"),
        (_deep(100), "nested deeper than"),
        (_deep(20, {}), "nested deeper than"),  # 41 levels, the innermost empty
        (_cyclic(), "nested deeper than"),
    ],
    ids=["100k-properties", "5k-properties", "100-deep", "41-deep-empty", "cyclic"],
)
def test_an_options_schema_too_large_to_check_is_refused_at_once(schema: Any, problem: str) -> None:
    found, took = timed(detector_problem, Declares(schema), set())
    assert found is not None and problem in found and found.startswith("detector 'declares'")
    assert took < 1.0  # checking 5,000 properties took ~10 s, 100,000 hung registration


def test_an_options_schema_within_the_limit_is_checked_as_before() -> None:
    assert detector_problem(Declares(_properties(300)), set()) is None  # ~600 values
    bad = _properties(10)
    bad["properties"]["p0"] = {"type": "no-such-type"}
    found = detector_problem(Declares(bad), set())
    assert found is not None and "invalid options schema" in found
