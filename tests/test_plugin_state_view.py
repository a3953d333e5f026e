"""A plugin detector sees the session through read-only views (issue 22, item 12): whatever it
does to what it is handed, the other detectors still see every call and the host's call never
raises. What a detector may do still works: read the history and the index through the
helpers, keep its own `state.scratch[id]`.

Detectors are added to a registry built from the real one (as `Registered(..., builtin=False)`,
what loading does for a third-party plugin), so no plugin has to be installed.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import NO_DOOM, SMALL

import loopguard
from loopguard.detection.plugins import Registered, Registry, load_registry
from loopguard.detectors.support.window import TurnWindow
from loopguard.plugin import (
    entry_of,
    no_progress_streak,
    same_signature,
    scoped_newest_first,
)


def guard_with(*detectors: loopguard.Detector, **blocks: Any) -> loopguard.Guard:
    base = load_registry()
    extra = tuple(Registered(d, f"lgfake[{d.id}]", False) for d in detectors)
    registry = Registry(base.entries + extra, (), base.plugin_manager)
    return loopguard.Guard.from_dict({"version": 1, **blocks}, registry=registry)


class Meddler(loopguard.Detector):
    """Does `act(call, state)` on every check, then votes nothing."""

    id = "meddler"
    levels = ("warn",)

    def __init__(self, act: Any, where: str = "check") -> None:
        self.act, self.where = act, where

    def check(self, call: Any, state: Any, cfg: Any) -> None:
        if self.where == "check":
            self.act(call, state)

    def after(self, call: Any, state: Any, cfg: Any) -> None:
        if self.where == "after":
            self.act(call, state)

    def compacted(self, state: Any, cfg: Any) -> None:
        if self.where == "compacted":
            self.act(None, state)


def _clear_history(call: Any, state: Any) -> None:
    state.history.clear()


def _set(name: str, value: Any) -> Any:
    def act(call: Any, state: Any) -> None:
        setattr(state, name, value)

    return act


def _blank_entries(call: Any, state: Any) -> None:
    for entry in state.history:
        entry.outcome = None
        entry.digest = b"x"


def _wipe_scratch(call: Any, state: Any) -> None:
    for key in ("doom_loop_exact", "_open", "_lost", "_closed_round"):
        state.scratch[key] = None


def _index(call: Any, state: Any) -> None:
    for bucket in list(state.index.values()):
        bucket.entries.clear()


def _digests(call: Any, state: Any) -> None:
    state.digests.clear()


def _call(call: Any, state: Any) -> None:
    call.seq, call.call_id, call.digest, call.tool = "x", ["unhashable"], b"x", None


def _args(call: Any, state: Any) -> None:
    call.args.clear()
    call.args["mutated"] = True


MEDDLING = {
    "history-cleared": _clear_history,
    "seq-text": _set("seq", "x"),
    "digests-none": _set("digests", None),
    "lock-none": _set("lock", None),
    "history-none": _set("history", None),
    "index-none": _set("index", None),
    "scratch-none": _set("scratch", None),
    "entries-blanked": _blank_entries,
    "scratch-of-others": _wipe_scratch,
    "index-buckets-cleared": _index,
    "digests-cleared": _digests,
    "call-fields": _call,
    "call-args": _args,
}


def _loop(session: loopguard.Session, calls: int = 6) -> list[str]:
    actions = []
    for _ in range(calls):
        args = {"path": "a.txt"}
        actions.append(session.before_call("read", args).action)
        session.after_call("read", args, "same content")
        assert args == {"path": "a.txt"}  # the host's own arguments are never touched
    return actions


ROLLING = {"loop_detection": {"enabled": True}}  # the per-signature index is kept too
# The rolling detectors alone (they read the index), small thresholds: warn at 3, critical at 5.
INDEXED = {"loop_detection": {"enabled": True, **SMALL}, "detectors": NO_DOOM}
POLICIES = {"default": ROLLING, "indexed": INDEXED}
BASELINE = {name: _loop(guard_with(**rules).session("b")) for name, rules in POLICIES.items()}


def test_the_baselines_stop_the_loop() -> None:
    assert BASELINE["default"][2] != "allow"  # doom_loop_exact: the third identical read
    assert BASELINE["indexed"][3:] == ["warn", "warn", "critical"]  # generic_repeat


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("where", ["check", "after"])
@pytest.mark.parametrize("case", sorted(MEDDLING))
def test_a_plugin_cannot_blind_the_other_detectors_or_raise(
    case: str, where: str, policy: str
) -> None:
    session = guard_with(Meddler(MEDDLING[case], where), **POLICIES[policy]).session("s")
    assert _loop(session) == BASELINE[policy]  # the same decisions as without the plugin
    assert [e.seq for e in session.history()] == [1, 2, 3, 4, 5, 6]


def test_meddling_is_a_fault_of_the_plugin_alone() -> None:
    session = guard_with(Meddler(_set("seq", "x"))).session("s")
    decision = session.before_call("read", {"path": "a"})
    assert decision.action == "allow"
    assert decision.faults and decision.faults[0].startswith("lgfake[meddler]: AttributeError")


def test_compacted_gets_the_view_too() -> None:
    guard = guard_with(Meddler(_clear_history, "compacted"))
    session = guard.session("s")
    session.before_call("read", {"path": "a"})
    session.compacted()
    assert [e.seq for e in session.history()] == [1]


class Reader(loopguard.Detector):
    """Reads everything a detector may read, keeps a count in its own scratch slot."""

    id = "reader"
    levels = ("warn",)
    seen: list[Any]

    def __init__(self) -> None:
        self.seen = []

    def check(self, call: Any, state: Any, cfg: Any) -> Any:
        state.scratch[self.id] = state.scratch.get(self.id, 0) + 1
        same = same_signature(state, call)
        streak = no_progress_streak(state, call)
        newest = next(scoped_newest_first(state, call.run_id), None)
        first = entry_of(state, 1)
        self.seen.append(
            (
                state.scratch[self.id],
                [e.seq for e in same],
                streak,
                newest and (newest.seq, newest.tool, newest.pending, newest.failed),
                first and first.to_dict()["seq"],
                len(state.history),
                [e.seq for e in state.history[-2:]],
                call.digest in state.digests,
                call.args,
                state.seq,
                "doom_loop_exact" in state.scratch,
            )
        )
        if state.scratch[self.id] >= 3:
            return self.vote("warn", state.scratch[self.id], "k", "seen three", (1, 2))
        return None


@pytest.mark.parametrize("indexed", [True, False], ids=["index", "no-index"])
def test_a_plugin_reads_the_history_and_keeps_its_own_scratch(indexed: bool) -> None:
    reader = Reader()
    blocks: dict[str, Any] = {"loop_detection": {"enabled": True}} if indexed else {}
    session = guard_with(reader, **blocks).session("s")
    decisions = []
    for _ in range(3):
        decisions.append(session.before_call("read", {"path": "a"}))
        session.after_call("read", {"path": "a"}, error="boom")
    third = reader.seen[2]
    assert third[0] == 3  # its own slot persists between calls
    assert third[1] == [1, 2]  # same_signature, oldest first
    assert third[2][0] == 2  # the no-progress streak of the two earlier failures
    assert third[3] == (2, "read", False, True)
    assert third[4] == 1
    assert third[5:8] == (2, [1, 2], True)
    assert third[8] == {"path": "a"} and third[9] == 3
    assert third[10] is False  # another detector's scratch is not visible
    assert any(v.detector == "reader" for v in decisions[2].votes)
    assert decisions[2].faults == ()


def test_a_plugin_turn_window_lives_in_its_own_slot() -> None:
    class Windowed(loopguard.Detector):
        id = "windowed"
        levels = ("warn",)

        def check(self, call: Any, state: Any, cfg: Any) -> Any:
            window = TurnWindow.of(state, self.id, call.turn, 2)
            window.push(call.seq)
            if len(window.items) == 2:
                return self.vote("warn", 2, "w", f"window {window.items}")
            return None

    session = guard_with(Windowed()).session("s")
    session.before_call("a", {})
    decision = session.before_call("b", {})
    assert decision.faults == () and decision.message is not None
    assert "window [1, 2]" in decision.message


def test_configure_gets_a_copy_of_the_rules() -> None:
    class Rewriter(loopguard.Detector):
        id = "rewriter"
        levels = ("warn",)

        def configure(self, options: Any, config: Any) -> Any:
            config.setdefault("detectors", {})["doom_loop_exact"] = {"enabled": False}
            config["aggregator"] = {"fail_mode": "closed", "order": ["rewriter"]}
            config.clear()
            return None

    session = guard_with(Rewriter(), **ROLLING).session("s")
    assert _loop(session) == BASELINE["default"]
    assert session.config["aggregator"].get("fail_mode", "open") == "open"
