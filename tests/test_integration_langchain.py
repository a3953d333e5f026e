"""LoopGuardMiddleware inside LangChain's real `create_agent` loop, offline.

The model is a `GenericFakeChatModel` subclass whose `bind_tools` returns itself and which
builds a fresh AIMessage (fresh call ids) every round from a script. Every test runs
through `invoke` and `ainvoke`.
"""

from __future__ import annotations

import sys

import pytest

if sys.version_info < (3, 11):  # the framework's own floor; CI's main run is 3.11
    pytest.skip("LangChain 1.5 needs Python 3.11 or newer", allow_module_level=True)

import asyncio
import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any

import integration_tools as fns
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

import loopguard
from loopguard.integrations.langchain import LoopGuardMiddleware

pytestmark = pytest.mark.slow  # drives the real agent framework (whose import takes ~1 s)

WARN_AT_2 = {
    "enabled": True,
    "warning_threshold": 2,
    "critical_threshold": 5,
    "global_circuit_breaker_threshold": 8,
}
NO_DOOM = {
    "doom_loop_exact": {"enabled": False},
    "doom_loop_fuzzy": {"enabled": False},
    "cycle": {"enabled": False},
}
Step = Any  # a str (an answer) or a list of (tool name, args) pairs (one batch of calls)


class ScriptedChat(GenericFakeChatModel):
    """Fresh AIMessages from `script`; the last step repeats forever when `loop` is set."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:
        return self


def chat(script: list[Step], loop: bool = False) -> ScriptedChat:
    ids = itertools.count(1)

    def replies() -> Iterator[AIMessage]:
        steps: Any = itertools.chain(script, itertools.repeat(script[-1])) if loop else script
        for step in steps:
            if isinstance(step, str):
                yield AIMessage(step)
            else:
                yield AIMessage(
                    "",
                    tool_calls=[{"name": n, "args": a, "id": f"call_{next(ids)}"} for n, a in step],
                )

    return ScriptedChat(messages=replies())


read, write, broken, portfolio = (
    tool(fns.read),
    tool(fns.write),
    tool(fns.broken),
    tool(fns.portfolio),
)


@pytest.fixture(autouse=True)
def _clear() -> None:
    fns.RAN.clear()


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest) -> Callable[..., dict[str, Any]]:
    def go(agent: Any, text: str, thread: str = "t1") -> dict[str, Any]:
        payload = {"messages": [HumanMessage(text)]}
        config = {"configurable": {"thread_id": thread}, "recursion_limit": 60}
        if request.param == "sync":
            return agent.invoke(payload, config)  # type: ignore[no-any-return]
        return asyncio.run(agent.ainvoke(payload, config))  # type: ignore[no-any-return]

    return go


def agent_with(
    model: Any,
    tools: list[Any],
    guard: loopguard.Guard | None = None,
    middleware: list[Any] | None = None,
) -> tuple[Any, LoopGuardMiddleware]:
    lg = LoopGuardMiddleware(guard)
    agent = create_agent(
        model, tools, middleware=[*(middleware or []), lg], checkpointer=InMemorySaver()
    )
    return agent, lg


def tool_results(state: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


def status(message: ToolMessage) -> str:
    return str(json.loads(message.text.split("\n\n")[0])["status"])


def assert_every_call_answered(state: dict[str, Any]) -> None:
    asked = [c["id"] for m in state["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]
    answered = [m.tool_call_id for m in tool_results(state)]
    assert sorted(asked) == sorted(answered) and len(set(answered)) == len(answered)


def test_a_looping_model_is_stopped_with_the_breaker_text(
    run: Callable[..., dict[str, Any]],
) -> None:
    agent, lg = agent_with(chat([[("read", {"path": "a"})]], loop=True), [read])
    state = run(agent, "read a")
    results = tool_results(state)
    assert fns.RAN == ["read a", "read a"]  # the third identical call is blocked, the fourth breaks
    assert [status(m) for m in results[2:]] == ["blocked", "error"]
    assert all(m.status == "error" for m in results[2:])
    breaker = lg.core.session("t1").history()[-1]
    final = state["messages"][-1]
    assert isinstance(final, AIMessage) and not final.tool_calls
    assert final.text.startswith("[loopguard] Stopped: read was called 3 times")
    assert breaker.tool == "read"
    assert_every_call_answered(state)


def test_a_healthy_run_is_untouched(run: Callable[..., dict[str, Any]]) -> None:
    script: list[Step] = [[("read", {"path": "a"})], [("write", {"path": "b"})], "all done"]
    plain = create_agent(chat(script), [read, write], checkpointer=InMemorySaver())
    guarded, _ = agent_with(chat(script), [read, write])
    expected, got = run(plain, "copy a to b"), run(guarded, "copy a to b")
    assert [(type(m), m.text) for m in got["messages"]] == [
        (type(m), m.text) for m in expected["messages"]
    ]
    assert got["messages"][-1].text == "all done"
    assert fns.RAN == ["read a", "write b"] * 2


def test_parallel_calls_one_blocked_the_rest_aborted(run: Callable[..., dict[str, Any]]) -> None:
    loop = [("read", {"path": "a"})]
    batch = [("read", {"path": "a"}), ("write", {"path": "x"}), ("write", {"path": "y"})]
    agent, _ = agent_with(chat([loop, loop, loop, batch, "unused"]), [read, write])
    state = run(agent, "read a")
    last_three = tool_results(state)[-3:]
    assert [status(m) for m in last_three] == ["error", "aborted", "aborted"]
    assert "tripped the loop breaker" in last_three[1].text
    assert [m.status for m in last_three] == ["error"] * 3
    assert not any(r.startswith("write") for r in fns.RAN)
    assert_every_call_answered(state)
    assert state["messages"][-1].text.startswith("[loopguard] Stopped:")


def test_a_raising_tool_is_recorded_and_re_raised(run: Callable[..., dict[str, Any]]) -> None:
    agent, lg = agent_with(chat([[("broken", {"path": "a"})], "unused"]), [broken])
    with pytest.raises(ValueError, match="cannot open a"):
        run(agent, "open a")
    entry = lg.core.session("t1").history()[-1]
    assert entry.tool == "broken" and (entry.outcome or b"").startswith(b"error:")


def test_a_required_tool_retry_goes_back_to_the_model(run: Callable[..., dict[str, Any]]) -> None:
    guard = loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]})
    script: list[Step] = ["计划：先读取持仓", [("portfolio", {"mode": "diagnose"})], "整体健康。"]
    agent, _ = agent_with(chat(script), [portfolio], guard)
    state = run(agent, "帮我看看持仓")
    retries = [m for m in state["messages"][1:] if isinstance(m, HumanMessage)]
    assert len(retries) == 1 and 'portfolio(mode="diagnose")' in retries[0].text
    assert fns.RAN == ["portfolio diagnose"]
    assert state["messages"][-1].text == "整体健康。"


def test_a_retry_that_never_comes_ends_with_the_warning(run: Callable[..., dict[str, Any]]) -> None:
    guard = loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]})
    agent, _ = agent_with(chat(["没问题。"], loop=True), [portfolio], guard)
    state = run(agent, "帮我看看持仓")
    final = state["messages"][-1].text
    assert final.endswith("没问题。") and "portfolio" in final and final != "没问题。"


def test_a_summary_message_marks_the_session_compacted(
    run: Callable[..., dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    compactions: list[str] = []
    original = loopguard.Session.compacted

    def spy(self: loopguard.Session) -> None:
        compactions.append(self.id)
        original(self)

    monkeypatch.setattr(loopguard.Session, "compacted", spy)
    script: list[Step] = [[("read", {"path": str(i)})] for i in range(4)] + ["done"]
    summary = SummarizationMiddleware(
        chat(["the summary"]), trigger=("messages", 6), keep=("messages", 2)
    )
    agent, _ = agent_with(chat(script), [read], middleware=[summary])
    state = run(agent, "read four files")
    assert any(m.additional_kwargs.get("lc_source") == "summarization" for m in state["messages"])
    assert compactions == ["t1"]
    assert state["messages"][-1].text == "done"


def test_the_thread_id_is_the_session(run: Callable[..., dict[str, Any]]) -> None:
    agent, lg = agent_with(chat([[("read", {"path": "a"})], "ok"] * 2), [read])
    run(agent, "read a", thread="one")
    run(agent, "read a", thread="two")
    assert len(lg.core.session("one").history()) == 1 and len(lg.core.session("two").history()) == 1


def test_a_warning_note_is_appended_to_the_tool_result(run: Callable[..., dict[str, Any]]) -> None:
    guard = loopguard.Guard.from_dict(
        {"version": 1, "loop_detection": WARN_AT_2, "detectors": NO_DOOM}
    )
    agent, _ = agent_with(chat([[("read", {"path": "a"})]] * 3 + ["done"]), [read], guard)
    state = run(agent, "read a three times")
    first, second, third = tool_results(state)
    assert third.text.startswith(
        "same content\n\n[loopguard] Warning: read was already called 2 times"
    )
    assert first.text == second.text == "same content"
    assert state["messages"][-1].text == "done"


def test_a_breaker_before_the_required_tool_gives_a_retry_with_tools(
    run: Callable[..., dict[str, Any]],
) -> None:
    guard = loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]})
    script: list[Step] = [[("read", {"path": "a"})]] * 4 + [
        [("portfolio", {"mode": "diagnose"})],
        "整体健康。",
    ]
    agent, lg = agent_with(chat(script), [read, portfolio], guard)
    state = run(agent, "帮我看看持仓")
    retries = [m for m in state["messages"][1:] if isinstance(m, HumanMessage)]
    # as run_turn does: the third read breaks (retry), the read after the retry breaks again (retry)
    assert len(retries) == 2 and all('portfolio(mode="diagnose")' in m.text for m in retries)
    assert fns.RAN[-1] == "portfolio diagnose" and state["messages"][-1].text == "整体健康。"
    assert any(status(m) == "error" for m in tool_results(state) if m.text.startswith("{"))
