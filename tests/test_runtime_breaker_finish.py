"""A turn a breaker ended says so in its result (issue 24, item 10)."""

from __future__ import annotations

import asyncio

import pytest
from fakes import AsyncScriptedModel, Portfolio, ScriptedModel, calls, say

import loopguard
from loopguard.runtime.loop import TurnResult, arun_turn, run_turn

PORTFOLIO = loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]})
SEARCH = calls(("search", {"q": "x"}))


def drive(mode: str, rounds: list, tools: dict, question: str, name: str) -> TurnResult:
    session = PORTFOLIO.session(f"{name}-{mode}")
    messages = [{"role": "user", "content": question}]
    if mode == "sync":
        return run_turn(ScriptedModel(rounds), tools, messages, session)
    return asyncio.run(arun_turn(AsyncScriptedModel(rounds), tools, messages, session))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_breaker_that_ends_the_turn_reports_stopped_and_a_breaker_finish(mode: str) -> None:
    result = drive(mode, [SEARCH, SEARCH, SEARCH, say("never")], {"search": lambda a: 0}, "x", "b")
    breaker = [e.decision for e in result.events if e.kind == "decision"][-1]
    assert breaker is not None and breaker.action == "breaker"
    assert result.stopped is True
    last = result.events[-1]
    assert (last.kind, last.detail, last.decision) == ("finish", "breaker", None)
    assert last.to_dict()["detail"] == "breaker"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_normal_finish_is_not_stopped(mode: str) -> None:
    result = drive(mode, [SEARCH, say("done")], {"search": lambda a: 0}, "x", "n")
    last = result.events[-1]
    assert (result.stopped, last.kind, last.detail, last.decision) == (False, "finish", "ok", None)


def test_a_breaker_followed_by_a_successful_retry_is_a_normal_finish() -> None:
    rounds = [SEARCH, SEARCH, SEARCH, calls(("portfolio", {"mode": "diagnose"})), say("诊断完成")]
    tools = {"search": lambda a: "none", "portfolio": Portfolio()}
    result = drive("sync", rounds, tools, "帮我看看持仓", "r")
    assert [e.kind for e in result.events].count("retry") == 1
    assert (result.stopped, result.events[-1].detail, result.text) == (False, "ok", "诊断完成")
