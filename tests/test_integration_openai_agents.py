"""LoopGuard around real OpenAI Agents SDK runs, offline.

The model is the SDK's own `agents.testing.ScriptedModel` (fresh call ids every round);
tracing is disabled, no API key is read. Every test runs through `run` and `run_sync`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import integration_tools as fns
import pytest
from agents import Agent, RunHooks, Runner, SQLiteSession, function_tool, set_tracing_disabled
from agents.items import ToolCallOutputItem
from agents.testing import ScriptedModel, assistant_message, function_call

import loopguard
from loopguard.integrations.openai_agents import LoopGuard

pytestmark = pytest.mark.slow  # drives the real agent framework (whose import takes ~1 s)

Step = Any  # a str (an answer) or a list of (tool name, args) pairs (one batch)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    set_tracing_disabled(True)
    fns.RAN.clear()


read, write, broken, portfolio = (
    function_tool(fns.read),
    function_tool(fns.write),
    function_tool(fns.broken),
    function_tool(fns.portfolio),
)


def scripted(script: list[Step]) -> ScriptedModel:
    steps: list[Any] = []
    number = 0
    for step in script:
        if isinstance(step, str):
            steps.append([assistant_message(step)])
            continue
        batch = []
        for name, args in step:
            number += 1
            batch.append(function_call(name, args, call_id=f"call_{number}"))
        steps.append(batch)
    return ScriptedModel(steps)


def agent_for(model: ScriptedModel) -> Agent[Any]:
    return Agent(name="worker", model=model, tools=[read, write, broken, portfolio])


def in_own_loop(fn: Callable[[], Any]) -> Any:
    """Run a `run_sync` call in an event loop that is closed after (the SDK leaves its own open)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return fn()
    finally:
        asyncio.set_event_loop(None)
        loop.close()


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest) -> Callable[..., Any]:
    def go(guard: LoopGuard, agent: Agent[Any], text: str, **kw: Any) -> Any:
        if request.param == "sync":
            return in_own_loop(lambda: guard.run_sync(agent, text, **kw))
        return asyncio.run(guard.run(agent, text, **kw))

    return go


def outputs(result: Any) -> list[tuple[str, str]]:
    return [
        (item.raw_item["call_id"], str(item.output))
        for item in result.new_items
        if isinstance(item, ToolCallOutputItem)
    ]


def status(text: str) -> str:
    return str(json.loads(text)["status"])


def test_a_looping_model_is_stopped_with_the_breaker_text(run: Callable[..., Any]) -> None:
    guard = LoopGuard()
    result = run(
        guard, agent_for(scripted([[("read", {"path": "a"})]] * 8)), "read a", session_id="s1"
    )
    assert fns.RAN == ["read a", "read a"]
    assert [status(text) for _, text in outputs(result)[2:]] == ["blocked", "error"]
    assert result.final_output.startswith("[loopguard] Stopped: read was called 3 times")
    assert [e.tool for e in guard.core.session("s1").history()] == ["read"] * 4


def test_a_healthy_run_is_untouched(run: Callable[..., Any]) -> None:
    script: list[Step] = [[("read", {"path": "a"})], [("write", {"path": "b"})], "all done"]
    expected = in_own_loop(lambda: Runner.run_sync(agent_for(scripted(script)), "copy a to b"))
    got = run(LoopGuard(), agent_for(scripted(script)), "copy a to b")
    assert outputs(got) == outputs(expected) == [("call_1", "same content"), ("call_2", "written")]
    assert got.final_output == expected.final_output == "all done"
    assert fns.RAN == ["read a", "write b"] * 2


def test_parallel_calls_one_blocked_the_rest_aborted(run: Callable[..., Any]) -> None:
    loop = [("read", {"path": "a"})]
    batch = [("read", {"path": "a"}), ("write", {"path": "x"}), ("write", {"path": "y"})]
    result = run(LoopGuard(), agent_for(scripted([loop, loop, loop, batch, "unused"])), "read a")
    last = dict(outputs(result)[-3:])
    assert {k: status(v) for k, v in last.items()} == {
        "call_4": "error",
        "call_5": "aborted",
        "call_6": "aborted",
    }
    assert not any(r.startswith("write") for r in fns.RAN)
    assert sorted(k for k, _ in outputs(result)) == [f"call_{i}" for i in range(1, 7)]
    assert result.final_output.startswith("[loopguard] Stopped:")


def test_a_raising_tool_is_recorded_as_a_failure(run: Callable[..., Any]) -> None:
    guard = LoopGuard()
    result = run(
        guard,
        agent_for(scripted([[("broken", {"path": "a"})], "it failed"])),
        "open a",
        session_id="s1",
    )
    entry = guard.core.session("s1").history()[-1]
    assert entry.tool == "broken" and (entry.outcome or b"").startswith(b"error:")
    assert outputs(result)[0][1].startswith("An error occurred while running the tool")
    assert result.final_output == "it failed"


def test_a_required_tool_retry_is_a_new_run_with_the_retry_prompt(run: Callable[..., Any]) -> None:
    guard = LoopGuard(loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]}))
    model = scripted(["计划：先读取持仓", [("portfolio", {"mode": "diagnose"})], "整体健康。"])
    result = run(guard, agent_for(model), "帮我看看持仓")
    assert fns.RAN == ["portfolio diagnose"] and result.final_output == "整体健康。"
    retry_input = model.calls[1].input
    assert (
        retry_input[-1]["role"] == "user"
        and 'portfolio(mode="diagnose")' in retry_input[-1]["content"]
    )


def test_an_exhausted_retry_ends_with_the_warning(run: Callable[..., Any]) -> None:
    guard = LoopGuard(loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]}))
    result = run(guard, agent_for(scripted(["没问题。"] * 3)), "帮我看看持仓")
    assert result.final_output.endswith("没问题。") and "portfolio" in result.final_output


class CompactingSession(SQLiteSession):
    """An in-memory SDK session that compacts (keeps the last two items) when asked."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self.compactions = 0

    async def run_compaction(self, args: Any = None) -> None:
        items = await self.get_items()
        if len(items) > 2:
            self.compactions += 1
            await self.clear_session()
            await self.add_items(items[-2:])


def test_a_compacting_sdk_session_marks_the_guard_compacted(
    run: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    compactions: list[str] = []
    original = loopguard.Session.compacted
    monkeypatch.setattr(
        loopguard.Session, "compacted", lambda s: (compactions.append(s.id), original(s))[1]
    )
    memory = CompactingSession("conv-7")
    try:
        result = run(
            LoopGuard(),
            agent_for(scripted([[("read", {"path": "a"})], "ok"])),
            "read a",
            session=memory,
        )
    finally:
        memory.close()  # Python 3.13 warns about an SQLite connection left to the collector
    assert result.final_output == "ok" and memory.compactions == 1
    assert compactions == ["conv-7"]  # the SDK session's id is the guard's session


def test_user_hooks_still_run(run: Callable[..., Any]) -> None:
    seen: list[str] = []

    class Mine(RunHooks[Any]):
        async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
            seen.append("llm_end")

        async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
            seen.append(f"tool_end {tool.name}")

    run(LoopGuard(), agent_for(scripted([[("read", {"path": "a"})], "ok"])), "read a", hooks=Mine())
    assert seen == ["llm_end", "tool_end read", "llm_end"]


def test_a_breaker_before_the_required_tool_gives_a_retry_run(run: Callable[..., Any]) -> None:
    guard = LoopGuard(loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]}))
    script: list[Step] = [[("read", {"path": "a"})]] * 4 + [
        [("portfolio", {"mode": "diagnose"})],
        "整体健康。",
    ]
    model = scripted(script)
    result = run(guard, agent_for(model), "帮我看看持仓")
    assert fns.RAN[-1] == "portfolio diagnose" and result.final_output == "整体健康。"
    retry_inputs = [
        c.input[-1]
        for c in model.calls
        if isinstance(c.input, list) and c.input[-1].get("role") == "user"
    ]
    assert any('portfolio(mode="diagnose")' in str(m.get("content")) for m in retry_inputs)


def test_a_handoff_is_not_a_guarded_tool_call(run: Callable[..., Any]) -> None:
    specialist = Agent(name="specialist", model=scripted(["handled"]), tools=[read])
    front = Agent(
        name="front", model=scripted([[("transfer_to_specialist", {})]]), handoffs=[specialist]
    )
    guard = LoopGuard()
    result = run(guard, front, "help", session_id="s1")
    assert result.final_output == "handled"
    assert guard.core.session("s1").history() == []


def test_a_run_that_raises_leaves_the_guard_clean(run: Callable[..., Any]) -> None:
    """The model script runs out (the SDK raises): the error reaches the caller, and the turn's
    session variable is reset in the caller's own context (no warning when it is collected)."""
    import gc

    guard = LoopGuard()
    with pytest.raises(Exception) as raised:
        run(guard, agent_for(scripted([[("read", {"path": "a"})]])), "read a", session_id="s9")
    assert not isinstance(raised.value, AssertionError)
    gc.collect()  # an unclosed turn generator would be finalised here, from another context
    assert [e.tool for e in guard.core.session("s9").history()] == ["read"]
