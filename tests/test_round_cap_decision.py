"""The runtime's round cap is a decision like every other: `loopguard_on_decision` listeners
get it, it is logged on `loopguard.decisions`, and a shared store's session reports it once.
Also the session's notifier in a shared store: decisions are held back until the write lands.

The listener is a real hook implementation in a fake installed plugin (see `plugin_fakes`).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes import ScriptedModel, calls
from plugin_fakes import FakeSite, fake_site

import loopguard
from loopguard.stores.sqlite import SqliteStore

LISTENER = (
    "import loopguard\n"
    "SEEN = []\n\n\n"
    "@loopguard.hookimpl\n"
    "def loopguard_on_decision(session_id, decision):\n"
    "    SEEN.append((session_id, decision))\n"
)
RULES = {"version": 1, "turn": {"max_tool_rounds": 3}}


@pytest.fixture
def seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """What an installed `loopguard_on_decision` listener receives."""
    with fake_site(tmp_path, monkeypatch) as site:
        site.add_dist("lgfake-ear", {"ear": "lgfake_ear"}, {"lgfake_ear": LISTENER})
        FakeSite.registry(site)
        yield sys.modules["lgfake_ear"].SEEN  # type: ignore[attr-defined]


def distinct_calls(messages: list[Any], _tools: bool) -> dict[str, Any]:
    """A model that never answers: a new search every round (no detector votes)."""
    return calls(("search", {"q": f"page {len(messages)}"}))


def run_to_the_cap(session: loopguard.Session) -> Any:
    model = ScriptedModel([distinct_calls], repeat_last=True)
    result = loopguard.run_turn(
        model,
        {"search": lambda a: {"page": a["q"]}},
        [{"role": "user", "content": "search everything"}],
        session,
        run_id="r1",
    )
    assert result.stopped and model.calls == 3
    return result


def test_the_round_cap_reaches_an_on_decision_listener(seen: list[Any]) -> None:
    session = loopguard.Guard.from_dict(RULES).session("capped")
    result = run_to_the_cap(session)
    stop = result.events[-1].decision
    assert seen == [("capped", stop)]
    assert stop.action == "breaker" and stop.detector == "max_tool_rounds"
    assert stop.top.code == "round_cap" and stop.top.count == 3
    assert stop.turn == 1 and stop.run_id == "r1"


def test_the_round_cap_is_in_the_decision_log(caplog: pytest.LogCaptureFixture) -> None:
    session = loopguard.Guard.from_dict(RULES).session("logged")
    with caplog.at_level(logging.WARNING, logger="loopguard.decisions"):
        result = run_to_the_cap(session)
    records = [r for r in caplog.records if r.name == "loopguard.decisions"]
    assert [r.levelno for r in records] == [logging.ERROR]
    message = records[0].getMessage()
    assert message.startswith("breaker  (seq 0, turn 1): ")
    assert message.endswith(f"{result.text} [max_tool_rounds, count 3]")


def test_a_shared_store_session_reports_the_round_cap_once(seen: list[Any], tmp_path: Path) -> None:
    guard = loopguard.Guard.from_dict(RULES, store=SqliteStore(tmp_path / "state.db"))
    session = guard.session("stored")
    result = run_to_the_cap(session)
    assert seen == [("stored", result.events[-1].decision)]


def test_report_hands_over_non_allow_decisions_only(seen: list[Any]) -> None:
    session = loopguard.Guard.from_dict(RULES).session("host")
    allow = loopguard.Decision("allow")
    warn = loopguard.Decision("warn", (), "note", detector="host_check")
    assert session.report(allow) is allow and session.report(warn) is warn
    assert seen == [("host", warn)]
    with pytest.raises(TypeError, match="takes a loopguard.Decision, not dict"):
        session.report({"action": "breaker"})  # type: ignore[arg-type]


@pytest.mark.parametrize("race", ["end_round", "other_call"])
def test_a_method_re_run_after_a_lost_write_notifies_only_its_last_run(
    seen: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, race: str
) -> None:
    rules = {"version": 1, "detectors": {"doom_loop_exact": {"window": 2, "threshold": 2}}}
    store = SqliteStore(tmp_path / "state.db")
    session = loopguard.Guard.from_dict(rules, store=store).session("raced")
    other = loopguard.Guard.from_dict(rules, store=SqliteStore(tmp_path / "state.db")).session(
        "raced"
    )
    session.before_call("read", {"path": "x"}, call_id="1")
    session.after_call("read", {"path": "x"}, result="same", call_id="1")
    real_commit, raced = store.commit, []

    def commit(*args: Any) -> Any:
        if not raced:  # another worker writes this session first: the method runs again
            raced.append(
                other.end_round()
                if race == "end_round"
                else other.before_call("list", {}, call_id="o")
            )
        return real_commit(*args)

    monkeypatch.setattr(store, "commit", commit)
    decision = session.before_call("read", {"path": "x"}, call_id="2")
    assert raced
    if race == "end_round":  # the re-run decides the same: the listener hears it once
        assert decision.action == "critical" and seen == [("raced", decision)]
    else:  # another call came between: the first run's critical was never written, nor heard
        assert decision.action == "allow" and seen == []
