"""run_turn / arun_turn against the real Guard, with a scripted fake model.

Every test runs twice: through `run_turn` and through `arun_turn` with an async model and
async tools, so the twins are held to the same behaviour. Turns with a required tool use
builtin:portfolio (builtin:default has no intents).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from fakes import AsyncScriptedModel, Portfolio, ScriptedModel, calls, say

import loopguard
from loopguard.runtime.loop import TurnResult, arun_turn, run_turn
from loopguard.text.messages import render

Driver = Callable[..., tuple[TurnResult, ScriptedModel]]
PORTFOLIO = loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]})


def _asyncify(tools: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        async def tool(args: dict[str, Any]) -> Any:
            await asyncio.sleep(0)
            return fn(args)

        return tool

    return {name: wrap(fn) for name, fn in tools.items()}


@pytest.fixture(params=["sync", "async"])
def drive(request: pytest.FixtureRequest) -> Driver:
    """drive(rounds, tools, messages, session=None, **kw) -> (result, model)."""

    def run(
        rounds: list[Any],
        tools: dict[str, Any],
        messages: list[dict[str, Any]],
        session: Any = None,
        repeat_last: bool = False,
        **kw: Any,
    ) -> tuple[TurnResult, ScriptedModel]:
        session = session or loopguard.Guard.default().session("s1")
        if request.param == "sync":
            model = ScriptedModel(rounds, repeat_last)
            return run_turn(model, tools, messages, session, **kw), model
        amodel = AsyncScriptedModel(rounds, repeat_last)
        return asyncio.run(arun_turn(amodel, _asyncify(tools), messages, session, **kw)), amodel

    return run


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def tool_messages(result: TurnResult) -> list[dict[str, Any]]:
    return [m for m in result.messages if m["role"] == "tool"]


def assert_every_id_answered(result: TurnResult) -> None:
    asked = [
        c["id"]
        for m in result.messages
        if m["role"] == "assistant"
        for c in m.get("tool_calls", [])
    ]
    answered = [m["tool_call_id"] for m in tool_messages(result)]
    assert sorted(asked) == sorted(answered)


def payload(message: dict[str, Any]) -> dict[str, Any]:
    return json.loads(message["content"].split("\n\n")[0])


def test_plan_only_then_retry_then_tool_then_answer(drive: Driver) -> None:
    portfolio = Portfolio()
    result, model = drive(
        [
            say("计划：1. 先读取持仓 2. 再分析"),
            calls(("portfolio", {"mode": "diagnose"})),
            say("你的持仓很健康"),
        ],
        {"portfolio": portfolio},
        user("帮我看看持仓"),
        PORTFOLIO.session("p"),
    )
    assert model.calls == 3
    assert portfolio.calls == [{"mode": "diagnose"}]
    assert result.text == "你的持仓很健康"
    assert [m["role"] for m in result.messages] == ["assistant", "tool", "assistant"]
    retry_seen = model.requests[1][0][-1]
    assert retry_seen["role"] == "user" and 'portfolio(mode="diagnose")' in retry_seen["content"]
    assert [e.kind for e in result.events] == ["retry", "decision", "finish"]


def test_three_text_answers_end_with_the_warning(drive: Driver) -> None:
    result, model = drive(
        [say("持仓不错"), say("真的不错"), say("非常不错")],
        {"portfolio": Portfolio()},
        user("帮我看看持仓"),
        PORTFOLIO.session("w"),
    )
    assert model.calls == 3
    session_config = PORTFOLIO.session("x").config
    warning = render(session_config, "exhausted", "中", tool="portfolio", retries=2)
    assert result.text.startswith(warning) and result.text.endswith("非常不错")
    assert result.messages == [{"role": "assistant", "content": result.text}]
    assert result.events[-1].detail == "exhausted"


def test_a_required_tool_the_agent_does_not_offer_is_no_requirement(drive: Driver) -> None:
    session = PORTFOLIO.session("offered")
    result, model = drive(
        [say("持仓不错")], {"search": lambda a: "none"}, user("帮我看看持仓"), session
    )
    assert (model.calls, result.text) == (1, "持仓不错")
    assert result.messages == [{"role": "assistant", "content": "持仓不错"}]
    assert [e.kind for e in result.events] == ["finish"] and result.events[0].detail == "ok"
    assert session.expectation is None


def test_the_default_rules_require_no_tool(drive: Driver) -> None:
    result, model = drive([say("持仓不错")], {"portfolio": Portfolio()}, user("帮我看看持仓"))
    assert (model.calls, result.text) == (1, "持仓不错")


def test_a_question_needing_no_tool_takes_one_model_call(drive: Driver) -> None:
    result, model = drive([say("晴天")], {}, user("今天天气怎么样"))
    assert (model.calls, result.text, result.model_calls) == (1, "晴天", 1)


def test_the_same_call_three_rounds_in_a_row_gets_one_doom_loop_error(drive: Driver) -> None:
    search = calls(("search", {"q": "海德股份"}))
    ran: list[Any] = []
    result, model = drive(
        [search, search, search, say("never asked")],
        {"search": lambda a: ran.append(a) or {"hits": 0}},
        user("查一下海德股份"),
        session=PORTFOLIO.session("doom"),
    )  # the seed's rules: a breaker at once
    errors = [payload(m) for m in tool_messages(result) if payload(m).get("status") == "error"]
    assert len(errors) == 1 and errors[0]["detector"] == "doom_loop_exact"
    assert errors[0]["reason"] == "tool-loop" and errors[0]["count"] == 3
    assert len(ran) == 2
    # The breaker ends the turn (no required tool here, so no retry): 3 model calls,
    # and as the model wrote no text, the answer is the breaker's explanation.
    assert model.calls == 3
    breaker = next(
        e.decision for e in result.events if e.decision and e.decision.action == "breaker"
    )
    assert breaker.message and result.text == breaker.message
    assert result.messages[-1] == {"role": "assistant", "content": result.text}
    assert_every_id_answered(result)


def test_a_breaker_keeps_the_text_the_model_wrote_so_far(drive: Driver) -> None:
    search = calls(("search", {"q": "x"}))
    first = calls(("search", {"q": "x"}), content="我先搜索一下。")
    result, model = drive(
        [first, search, search],
        {"search": lambda a: "none"},
        user("查一下 x"),
        session=PORTFOLIO.session("text"),
    )
    assert model.calls == 3
    assert result.text == "我先搜索一下。"
    assert result.messages[-1] == {"role": "assistant", "content": "我先搜索一下。"}


def test_a_breaker_in_a_round_with_several_calls_answers_all_of_them(drive: Driver) -> None:
    ran: list[Any] = []
    tools = {"search": lambda a: ran.append(a) or "ok"}
    search = ("search", {"q": "x"})
    result, _ = drive(
        [
            calls(search),
            calls(search),
            calls(search, ("search", {"q": "y"}), ("search", {"q": "z"})),
            say("好"),
        ],
        tools,
        user("搜索 x"),
        session=PORTFOLIO.session("several"),
    )
    statuses = [
        payload(m)["status"] if m["content"].startswith("{") else "ok"
        for m in tool_messages(result)
    ]
    assert statuses == ["ok", "ok", "error", "aborted", "aborted"]
    assert len(ran) == 2
    assert_every_id_answered(result)


def test_default_rules_block_the_third_repeat_then_stop_the_fourth(drive: Driver) -> None:
    search = calls(("search", {"q": "x"}))
    ran: list[Any] = []
    result, model = drive(
        [search, search, search, search, say("never asked")],
        {"search": lambda a: ran.append(a) or {"hits": 0}},
        user("search x"),
    )
    statuses = [
        payload(m).get("status") if m["content"].startswith('{"status') else "ok"
        for m in tool_messages(result)
    ]
    # the third identical call is blocked with a message and the turn goes on; the model
    # repeating it anyway is a second critical in the run: a breaker ends the turn
    assert statuses == ["ok", "ok", "blocked", "error"] and len(ran) == 2
    actions = [
        e.decision.action for e in result.events if e.decision and e.decision.action != "allow"
    ]
    assert actions == ["critical", "breaker"] and model.calls == 4
    assert_every_id_answered(result)


def test_the_round_cap_stops_the_turn(drive: Driver) -> None:
    session = loopguard.Guard.default().session("cap")
    cap = session.config["turn"]["max_tool_rounds"]
    distinct = lambda messages, _tools: calls(("search", {"q": f"page {len(messages)}"}))  # noqa: E731
    result, model = drive(
        [distinct],
        {"search": lambda a: {"page": a["q"]}},
        user("search everything"),
        session=session,
        repeat_last=True,
    )
    assert model.calls == cap and result.stopped
    stop = result.events[-1]
    assert stop.kind == "stop" and stop.decision is not None and stop.decision.action == "breaker"
    assert result.text == render(session.config, "round_cap", "en", rounds=cap)
    assert result.messages[-1] == {"role": "assistant", "content": result.text}
    assert_every_id_answered(result)


def test_a_raising_tool_reaches_the_model_as_an_error_and_is_a_failure(drive: Driver) -> None:
    def broken(args: dict[str, Any]) -> Any:
        raise RuntimeError("quote service down")

    session = loopguard.Guard.default().session("err")
    result, model = drive(
        [calls(("quote", {"code": "600000"})), say("报价服务暂时不可用")],
        {"quote": broken},
        user("查一下 600000 的报价"),
        session=session,
    )
    error = payload(tool_messages(result)[0])
    assert error == {"status": "error", "error": "RuntimeError: quote service down"}
    assert model.requests[1][0][-1]["content"] == tool_messages(result)[0]["content"]
    assert session.history()[-1].to_dict()["outcome"].startswith("error")


def test_invalid_json_arguments_give_an_error_result_and_do_not_run(drive: Driver) -> None:
    ran: list[Any] = []
    result, _ = drive(
        [calls(("search", "{not json")), calls(("search", "[1, 2]")), say("好")],
        {"search": ran.append},
        user("搜索"),
    )
    results = [payload(m) for m in tool_messages(result)]
    assert [r["status"] for r in results] == ["error", "error"]
    assert "invalid JSON" in results[0]["error"] and "JSON object" in results[1]["error"]
    assert ran == []


def test_an_unknown_tool_is_an_error_result(drive: Driver) -> None:
    result, _ = drive([calls(("nope", {})), say("好")], {}, user("hi"))
    assert payload(tool_messages(result)[0]) == {"status": "error", "error": "unknown tool: nope"}


def test_a_retry_after_a_breaker_reopens_the_tools(drive: Driver) -> None:
    portfolio = Portfolio()
    loop = calls(("search", {"q": "持仓"}))
    result, model = drive(
        [
            loop,
            loop,
            loop,
            say("没查到"),
            calls(("portfolio", {"mode": "diagnose"})),
            say("诊断完成"),
        ],
        {"search": lambda a: "none", "portfolio": portfolio},
        user("帮我看看持仓"),
        PORTFOLIO.session("b"),
    )
    # round 3: breaker, requirement unmet -> retry 1; round 4: a text answer -> retry 2;
    # round 5: the required call; round 6: the answer. Tools are offered on every retry.
    assert [enabled for _, enabled in model.requests] == [True] * 6
    assert [e.kind for e in result.events].count("retry") == 2
    assert portfolio.calls == [{"mode": "diagnose"}]
    assert result.text == "诊断完成"
    assert not [m for m in result.messages if m["role"] == "user"]
    assert_every_id_answered(result)


def test_on_round_can_replace_the_context_and_reports_compaction(drive: Driver) -> None:
    seen: list[int] = []

    def compact(rnd: int, messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        seen.append(rnd)
        return [{"role": "system", "content": "summary"}, *messages[-2:]] if rnd == 2 else None

    result, model = drive(
        [calls(("search", {"q": 1})), say("done")],
        {"search": lambda a: "r"},
        user("search"),
        on_round=compact,
    )
    assert seen == [2]
    assert model.requests[1][0][0] == {"role": "system", "content": "summary"}
    assert len(result.messages) == 3


def test_events_are_renderable(drive: Driver) -> None:
    result, _ = drive(
        [calls(("search", {"q": 1})), say("done")], {"search": lambda a: "r"}, user("hi")
    )
    kinds = [e.to_dict()["kind"] for e in result.events]
    assert kinds == ["decision", "finish"]
    assert result.events[0].to_dict()["decision"]["action"] == "allow"


def test_a_warning_note_is_appended_to_the_result_the_model_sees(drive: Driver) -> None:
    guard = loopguard.Guard.from_dict(
        {
            "version": 1,
            "extends": ["builtin:default"],
            "loop_detection": {"enabled": True, "warning_threshold": 2},
        }
    )
    poll = calls(("check_background_tasks", {}))
    result, _ = drive(
        [poll, poll, poll, say("still running")],
        {"check_background_tasks": lambda a: {"running": 1}},
        user("wait for it"),
        session=guard.session("warn"),
    )
    contents = [m["content"] for m in tool_messages(result)]
    warned = [e.decision for e in result.events if e.decision and e.decision.action == "warn"]
    assert len(warned) == 1 and warned[0].notify and warned[0].message
    assert contents[:2] == ['{"running": 1}'] * 2
    assert contents[2] == '{"running": 1}\n\n' + warned[0].message


def test_a_breaker_from_after_call_closes_the_tools(drive: Driver) -> None:
    poll = calls(("check_background_tasks", {}))  # exempt from doom loops, so only the
    compacted_at: list[int] = []  # post-compaction guard can stop it

    def compact(rnd: int, messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        if rnd == 2:
            compacted_at.append(rnd)
            return list(messages)
        return None

    result, model = drive(
        [poll, poll, poll, poll, say("never asked")],
        {"check_background_tasks": lambda a: {"running": 1}},
        user("wait for it"),
        on_round=compact,
    )
    breaker = [e.decision for e in result.events if e.decision and e.decision.action == "breaker"]
    assert len(breaker) == 1 and breaker[0].phase == "after"
    assert breaker[0].detector == "post_compaction_guard"
    assert model.calls == 4  # the breaker on round 4's result ends the turn
    assert result.text == breaker[0].message
    last_result = tool_messages(result)[-1]["content"]
    assert last_result.startswith('{"running": 1}') and last_result.endswith(breaker[0].message)
    assert_every_id_answered(result)


def test_a_looping_model_under_a_requirement_gets_its_retries_then_a_warning(drive: Driver) -> None:
    ran: list[Any] = []
    loop = calls(("search", {"q": "持仓"}))
    result, model = drive(
        [loop, loop, loop, loop, loop],
        {"search": lambda a: ran.append(a) or "none", "portfolio": Portfolio()},
        user("帮我看看持仓"),
        PORTFOLIO.session("l"),
    )
    # rounds 3, 4 and 5 each end in a doom-loop breaker; the first two get retries, the last
    # finishes with the exhausted warning in front of the breaker's explanation.
    assert model.calls == 5 and len(ran) == 2
    assert [e.kind for e in result.events].count("retry") == 2
    assert result.text.startswith("⚠") and "portfolio" in result.text
    assert not [m for m in result.messages if m["role"] == "user"]
    assert_every_id_answered(result)


def test_arun_turn_accepts_sync_model_and_tools() -> None:
    portfolio = Portfolio()
    model = ScriptedModel([calls(("portfolio", {"mode": "view"})), say("两只股票")])
    session = PORTFOLIO.session("mixed")
    result = asyncio.run(arun_turn(model, {"portfolio": portfolio}, user("我有什么持仓"), session))
    assert (result.text, model.calls, portfolio.calls) == ("两只股票", 2, [{"mode": "view"}])


def test_run_turn_refuses_async_callables_clearly() -> None:
    async def slow_tool(args: dict[str, Any]) -> str:
        return "never"

    session = loopguard.Guard.default().session("sync-async")
    result = run_turn(
        ScriptedModel([calls(("slow", {})), say("ok")]), {"slow": slow_tool}, user("hi"), session
    )
    assert "use arun_turn" in payload(tool_messages(result)[0])["error"]
    with pytest.raises(TypeError, match="arun_turn"):
        run_turn(AsyncScriptedModel([say("hi")]), {}, user("hi"), session)
