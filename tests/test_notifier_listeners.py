"""Decision listeners called without the plugin manager's hook call behave as through it:
the same listeners, in the same order, with the arguments each names; a failing listener
stops the rest and is logged once; wrappers and listeners registered later still work."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from loopguard.decision import Decision
from loopguard.detection.hookspecs import hookimpl
from loopguard.detection.plugins import new_plugin_manager
from loopguard.session.notifier import PluginNotifier

BLOCKED = Decision("critical", (), "blocked", "read")


class Listener:
    def __init__(self, name: str, seen: list[Any]) -> None:
        self.name, self.seen = name, seen

    @hookimpl
    def loopguard_on_decision(self, decision: Decision, rules_source: str) -> None:
        self.seen.append((self.name, decision.action, rules_source))


class AllArguments:
    def __init__(self, seen: list[Any]) -> None:
        self.seen = seen

    @hookimpl
    def loopguard_on_decision(self, session_id: str, decision: Decision, rules_source: str) -> None:
        self.seen.append(("all", session_id, decision.tool, rules_source))


class Failing:
    @hookimpl
    def loopguard_on_decision(self, session_id: str) -> None:
        raise RuntimeError(f"listener broke on {session_id}")


class Wrapper:
    def __init__(self, seen: list[Any]) -> None:
        self.seen = seen

    @hookimpl(wrapper=True)
    def loopguard_on_decision(self, decision: Decision) -> Any:
        self.seen.append(("wrapper before", decision.action))
        result = yield
        self.seen.append(("wrapper after", decision.action))
        return result


def order_through_pluggy(plugins: list[Any], seen: list[Any]) -> list[Any]:
    manager = new_plugin_manager()
    for plugin in plugins:
        manager.register(plugin)
    manager.hook.loopguard_on_decision(session_id="s", decision=BLOCKED, rules_source="r")
    called = list(seen)
    seen.clear()
    return called


def test_plain_listeners_are_called_in_the_plugin_managers_order() -> None:
    seen: list[Any] = []
    plugins = [Listener("first", seen), AllArguments(seen), Listener("last", seen)]
    expected = order_through_pluggy(plugins, seen)
    manager = new_plugin_manager()
    for plugin in plugins:
        manager.register(plugin)
    notifier = PluginNotifier(manager.hook.loopguard_on_decision, "r")
    notifier.decision("s", BLOCKED)
    assert (
        seen
        == expected
        == [("last", "critical", "r"), ("all", "s", "read", "r"), ("first", "critical", "r")]
    )
    seen.clear()
    notifier.decision("s", BLOCKED._replace(action="allow"))
    assert seen == []  # allow is never reported


def test_a_failing_listener_stops_the_rest_and_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[Any] = []
    manager = new_plugin_manager()
    manager.register(Listener("before", seen))
    manager.register(Failing())  # called first: the newest
    notifier = PluginNotifier(manager.hook.loopguard_on_decision, "r")
    with caplog.at_level(logging.ERROR, logger="loopguard"):
        notifier.decision("s1", BLOCKED)
        notifier.decision("s2", BLOCKED)
    assert seen == []  # as through the hook call: the failure ends the call
    failures = [r.getMessage() for r in caplog.records if "isolated" in r.getMessage()]
    assert len(failures) == 1 and "listener broke on s1" in failures[0]


def test_wrappers_and_later_listeners_go_through_the_hook_call() -> None:
    seen: list[Any] = []
    manager = new_plugin_manager()
    manager.register(Listener("plain", seen))
    manager.register(Wrapper(seen))
    PluginNotifier(manager.hook.loopguard_on_decision, "r").decision("s", BLOCKED)
    assert seen == [
        ("wrapper before", "critical"),
        ("plain", "critical", "r"),
        ("wrapper after", "critical"),
    ]
    seen.clear()
    manager = new_plugin_manager()
    manager.register(Listener("early", seen))
    notifier = PluginNotifier(manager.hook.loopguard_on_decision, "r")
    manager.register(Listener("late", seen))
    notifier.decision("s", BLOCKED)
    assert seen == [("late", "critical", "r"), ("early", "critical", "r")]
