"""The LoopGuard capability inside pydantic-ai's real agent graph, offline.

The model is a `FunctionModel` playing a script (fresh call ids every round) with real
model requests disallowed. Every test runs through `run_sync` and `await run`.
"""

from __future__ import annotations

import sys

import pytest

if sys.version_info < (3, 11):  # the framework's own floor; CI's main run is 3.11
    pytest.skip("pydantic-ai 2.68 needs Python 3.11 or newer", allow_module_level=True)

import asyncio
import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any

import integration_tools as fns
from pydantic_ai import Agent, models
from pydantic_ai import messages as pm
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.models.function import AgentInfo, FunctionModel

import loopguard
from loopguard.integrations.pydantic_ai import LoopGuard

pytestmark = pytest.mark.slow  # drives the real agent framework (whose import takes ~1 s)

Step = Any  # a str (an answer) or a list of (tool name, args) pairs (one batch)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", False)
    fns.RAN.clear()


def scripted(script: list[Step], loop: bool = False) -> FunctionModel:
    ids = itertools.count(1)
    steps: Iterator[Step] = iter(
        itertools.chain(script, itertools.repeat(script[-1])) if loop else script
    )

    def reply(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        step = next(steps)
        if isinstance(step, str):
            return pm.ModelResponse(parts=[pm.TextPart(step)])
        return pm.ModelResponse(
            parts=[pm.ToolCallPart(n, a, tool_call_id=f"call_{next(ids)}") for n, a in step]
        )

    return FunctionModel(reply)


read, write, broken, portfolio = fns.read, fns.write, fns.broken, fns.portfolio


TOOLS = [read, write, broken, portfolio]


def make_agent(
    model: FunctionModel,
    guard: loopguard.Guard | None = None,
    extra: list[Any] | None = None,
    retries: int = 1,
) -> tuple[Agent[None, str], LoopGuard]:
    lg = LoopGuard(guard)
    return Agent(model, tools=TOOLS, capabilities=[*(extra or []), lg], retries=retries), lg


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest) -> Callable[..., Any]:
    def go(agent: Agent[None, str], prompt: str, **kw: Any) -> Any:
        if request.param == "async":
            return asyncio.run(agent.run(prompt, **kw))
        loop = asyncio.new_event_loop()  # run_sync leaves its loop open; this one is closed
        asyncio.set_event_loop(loop)
        try:
            return agent.run_sync(prompt, **kw)
        finally:
            asyncio.set_event_loop(None)
            loop.close()

    return go


def returns(result: Any) -> list[pm.ToolReturnPart]:
    return [
        p
        for m in result.all_messages()
        if isinstance(m, pm.ModelRequest)
        for p in m.parts
        if isinstance(p, pm.ToolReturnPart)
    ]


def status(part: pm.ToolReturnPart) -> str:
    return str(json.loads(str(part.content))["status"])


def assert_every_call_answered(result: Any) -> None:
    asked = [
        p.tool_call_id
        for m in result.all_messages()
        if isinstance(m, pm.ModelResponse)
        for p in m.parts
        if isinstance(p, pm.ToolCallPart)
    ]
    answered = [p.tool_call_id for p in returns(result)]
    assert sorted(asked) == sorted(answered) and len(set(answered)) == len(answered)


def test_a_looping_model_is_stopped_with_the_breaker_text(run: Callable[..., Any]) -> None:
    agent, _ = make_agent(scripted([[("read", {"path": "a"})]], loop=True))
    result = run(agent, "read a")
    assert fns.RAN == ["read a", "read a"]
    assert [status(p) for p in returns(result)[2:]] == ["blocked", "error"]
    assert result.output.startswith("[loopguard] Stopped: read was called 3 times")
    assert_every_call_answered(result)


def test_a_healthy_run_is_untouched(run: Callable[..., Any]) -> None:
    script: list[Step] = [[("read", {"path": "a"})], [("write", {"path": "b"})], "all done"]
    plain: Agent[None, str] = Agent(scripted(script), tools=TOOLS)
    guarded, _ = make_agent(scripted(script))
    expected, got = run(plain, "copy a to b"), run(guarded, "copy a to b")
    shape = [
        [
            (
                type(p).__name__,
                getattr(p, "content", None) if not isinstance(p, pm.UserPromptPart) else p.content,
            )
            for p in m.parts
            if not isinstance(p, pm.ToolCallPart)
        ]
        for m in got.all_messages()
    ]
    assert shape == [
        [
            (type(p).__name__, getattr(p, "content", None))
            for p in m.parts
            if not isinstance(p, pm.ToolCallPart)
        ]
        for m in expected.all_messages()
    ]
    assert got.output == "all done"
    assert fns.RAN == ["read a", "write b"] * 2


def test_parallel_calls_one_blocked_the_rest_aborted(run: Callable[..., Any]) -> None:
    loop = [("read", {"path": "a"})]
    batch = [("read", {"path": "a"}), ("write", {"path": "x"}), ("write", {"path": "y"})]
    agent, _ = make_agent(scripted([loop, loop, loop, batch, "unused"]))
    result = run(agent, "read a")
    last = {p.tool_call_id: status(p) for p in returns(result)[-3:]}
    assert last == {"call_4": "error", "call_5": "aborted", "call_6": "aborted"}
    assert not any(r.startswith("write") for r in fns.RAN)
    assert result.output.startswith("[loopguard] Stopped:")
    assert_every_call_answered(result)


def test_a_raising_tool_is_recorded_and_re_raised(run: Callable[..., Any]) -> None:
    agent, lg = make_agent(scripted([[("broken", {"path": "a"})], "unused"]))
    with pytest.raises(ValueError, match="cannot open a"):
        run(agent, "open a", conversation_id="conv")
    entry = lg.core.session("conv").history()[-1]
    assert entry.tool == "broken" and (entry.outcome or b"").startswith(b"error:")


def test_a_required_tool_retry_asks_the_model_again(run: Callable[..., Any]) -> None:
    guard = loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]})
    script: list[Step] = ["计划：先读取持仓", [("portfolio", {"mode": "diagnose"})], "整体健康。"]
    agent, _ = make_agent(scripted(script), guard, retries=2)
    result = run(agent, "帮我看看持仓")
    prompts = [
        p
        for m in result.all_messages()
        if isinstance(m, pm.ModelRequest)
        for p in m.parts
        if not isinstance(p, (pm.UserPromptPart, pm.ToolReturnPart))
    ]
    assert len(prompts) == 1 and 'portfolio(mode="diagnose")' in str(prompts[0].content)
    assert fns.RAN == ["portfolio diagnose"] and result.output == "整体健康。"


def test_an_exhausted_retry_ends_with_the_warning(run: Callable[..., Any]) -> None:
    guard = loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]})
    agent, _ = make_agent(scripted(["没问题。"], loop=True), guard, retries=2)
    result = run(agent, "帮我看看持仓")
    assert result.output.endswith("没问题。") and "portfolio" in result.output


def test_a_history_processor_that_drops_messages_marks_compaction(
    run: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    compactions: list[str] = []
    original = loopguard.Session.compacted
    monkeypatch.setattr(
        loopguard.Session, "compacted", lambda s: (compactions.append(s.id), original(s))[1]
    )

    def keep_recent(messages: list[pm.ModelMessage]) -> list[pm.ModelMessage]:
        return messages if len(messages) < 5 else [messages[0], *messages[-2:]]

    script: list[Step] = [[("read", {"path": str(i)})] for i in range(4)] + ["done"]
    agent, _ = make_agent(scripted(script), extra=[ProcessHistory(keep_recent)])
    result = run(agent, "read four files", conversation_id="conv")
    assert result.output == "done"
    assert compactions and set(compactions) == {"conv"}


def test_the_conversation_id_is_the_session(run: Callable[..., Any]) -> None:
    agent, lg = make_agent(scripted([[("read", {"path": "a"})], "ok"] * 2))
    first = run(agent, "read a", conversation_id="c1")
    run(agent, "read a again", message_history=first.all_messages())
    assert [e.tool for e in lg.core.session("c1").history()] == ["read", "read"]


def test_a_breaker_before_the_required_tool_gives_a_retry_with_tools(
    run: Callable[..., Any],
) -> None:
    guard = loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]})
    script: list[Step] = [[("read", {"path": "a"})]] * 4 + [
        [("portfolio", {"mode": "diagnose"})],
        "整体健康。",
    ]
    agent, _ = make_agent(scripted(script), guard, retries=2)
    result = run(agent, "帮我看看持仓")
    assert fns.RAN[-1] == "portfolio diagnose" and result.output == "整体健康。"
    assert "error" in [status(p) for p in returns(result) if str(p.content).startswith("{")]
