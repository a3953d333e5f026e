"""The Agent Framework middleware inside a real `Agent`, offline.

The model is a chat client built from the framework's own layers (function invocation,
chat middleware, `BaseChatClient`) whose `_inner_get_response` plays a script with fresh
call ids. Every test runs through `await agent.run(...)` and, where the behaviour is the
same, a streaming run.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable, Sequence
from typing import Any

import integration_tools as fns
import pytest
from agent_framework import (
    Agent,
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    ResponseStream,
    SlidingWindowStrategy,
    tool,
)

import loopguard
from loopguard.integrations.agent_framework import LoopGuard

pytestmark = pytest.mark.slow  # drives the real agent framework (whose import takes ~1 s)

Step = Any  # a str (an answer) or a list of (tool name, args) pairs (one batch)
IDS = itertools.count(1)
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


class ScriptedClient(FunctionInvocationLayer, ChatMiddlewareLayer, BaseChatClient):  # type: ignore[misc]
    """A chat client (the framework's public layer order) whose model plays a script."""

    def __init__(self, script: list[Step], loop: bool = False) -> None:
        super().__init__()
        self.script = list(script)
        self.loop = loop
        self.seen: list[list[Message]] = []

    def _step(self) -> Step:
        return self.script[0] if self.loop or len(self.script) == 1 else self.script.pop(0)

    def _contents(self, messages: Sequence[Message]) -> list[Content]:
        self.seen.append(list(messages))
        step = self._step()
        if isinstance(step, str):
            return [Content.from_text(step)]
        return [
            Content.from_function_call(call_id=f"call_{next(IDS)}", name=n, arguments=a)
            for n, a in step
        ]

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any
    ) -> Any:
        contents = self._contents(messages)
        if not stream:

            async def reply() -> ChatResponse:
                return ChatResponse(messages=Message(role="assistant", contents=contents))

            return reply()

        async def updates() -> Any:
            yield ChatResponseUpdate(role="assistant", contents=contents)

        return ResponseStream(updates(), finalizer=ChatResponse.from_updates)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    fns.RAN.clear()


TOOLS = [tool(f) for f in (fns.read, fns.write, fns.broken, fns.portfolio)]


def make_agent(
    client: ScriptedClient, guard: loopguard.Guard | None = None, **kw: Any
) -> tuple[Agent, LoopGuard]:
    lg = LoopGuard(guard)
    return Agent(client=client, tools=TOOLS, middleware=lg.middleware, **kw), lg


@pytest.fixture(params=["run", "stream"])
def run(request: pytest.FixtureRequest) -> Callable[..., Any]:
    def go(agent: Agent, prompt: str, **kw: Any) -> Any:
        async def main() -> Any:
            if request.param == "run":
                return await agent.run(prompt, **kw)
            stream = agent.run(prompt, stream=True, **kw)
            async for _ in stream:
                pass
            return await stream.get_final_response()

        return asyncio.run(main())

    go.mode = request.param  # type: ignore[attr-defined]
    return go


def results(messages: Sequence[Message]) -> list[Content]:
    return [c for m in messages for c in m.contents if c.type == "function_result"]


def status(content: Content) -> str:
    return str(json.loads(str(content.result))["status"])


def answered_everything(messages: Sequence[Message]) -> bool:
    asked = [c.call_id for m in messages for c in m.contents if c.type == "function_call"]
    answered = [c.call_id for c in results(messages)]
    return sorted(asked) == sorted(answered) and len(set(answered)) == len(answered)


def test_a_looping_model_is_stopped_with_the_breaker_text(run: Callable[..., Any]) -> None:
    client = ScriptedClient([[("read", {"path": "a"})]], loop=True)
    agent, _ = make_agent(client)
    result = run(agent, "read a")
    assert fns.RAN == ["read a", "read a"]
    assert [status(c) for c in results(result.messages)[2:]] == ["blocked", "error"]
    assert result.messages[-1].text.startswith("[loopguard] Stopped: read was called 3 times")
    assert len(client.seen) == 4  # the model is not called once the breaker closed the tools
    assert answered_everything(result.messages)


def test_a_healthy_run_is_untouched(run: Callable[..., Any]) -> None:
    script: list[Step] = [[("read", {"path": "a"})], [("write", {"path": "b"})], "all done"]
    plain_client, client = ScriptedClient(script), ScriptedClient(script)
    plain = Agent(client=plain_client, tools=TOOLS)
    guarded, _ = make_agent(client)
    expected, got = run(plain, "copy a to b"), run(guarded, "copy a to b")

    def shape(messages: Sequence[Message]) -> list[Any]:
        return [
            (m.role, [(c.type, c.text, getattr(c, "result", None)) for c in m.contents])
            for m in messages
        ]

    assert got.text == expected.text == "all done"
    assert [shape(s) for s in client.seen] == [shape(s) for s in plain_client.seen]
    assert fns.RAN == ["read a", "write b"] * 2


def test_parallel_calls_one_blocked_the_rest_aborted(run: Callable[..., Any]) -> None:
    loop = [("read", {"path": "a"})]
    batch = [("read", {"path": "a"}), ("write", {"path": "x"}), ("write", {"path": "y"})]
    agent, _ = make_agent(ScriptedClient([loop, loop, loop, batch, "unused"]))
    result = run(agent, "read a")
    assert [status(c) for c in results(result.messages)[-3:]] == ["error", "aborted", "aborted"]
    assert not any(r.startswith("write") for r in fns.RAN)
    assert result.messages[-1].text.startswith("[loopguard] Stopped:")
    assert answered_everything(result.messages)


def test_a_raising_tool_is_recorded_and_the_model_sees_the_error(
    run: Callable[..., Any],
) -> None:
    agent, lg = make_agent(ScriptedClient([[("broken", {"path": "a"})], "gave up"]))
    session = agent.create_session()
    result = run(agent, "open a", session=session)
    assert result.text == "gave up"
    [answer] = results(result.messages)
    assert answer.exception and "cannot open a" in str(answer.exception)
    entry = lg.core.session(session.session_id).history()[-1]
    assert entry.tool == "broken" and (entry.outcome or b"").startswith(b"error:")


def test_a_warning_note_is_appended_to_the_result(run: Callable[..., Any]) -> None:
    guard = loopguard.Guard.from_dict(
        {"version": 1, "loop_detection": WARN_AT_2, "detectors": NO_DOOM}
    )
    agent, _ = make_agent(ScriptedClient([[("read", {"path": "a"})]] * 3 + ["done"]), guard)
    result = run(agent, "read a three times")
    first, second, third = (str(c.result) for c in results(result.messages))
    assert third.startswith("same content\n\n[loopguard] Warning: read was already called 2 times")
    assert first == second == "same content"
    assert result.messages[-1].text == "done"


def test_a_required_tool_retry_asks_the_model_again(run: Callable[..., Any]) -> None:
    if run.mode == "stream":  # type: ignore[attr-defined]
        pytest.skip("a streaming run has no required-tool retry")
    guard = loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]})
    script: list[Step] = ["计划：先读取持仓", [("portfolio", {"mode": "diagnose"})], "整体健康。"]
    client = ScriptedClient(script)
    agent, _ = make_agent(client, guard)
    session = agent.create_session()
    result = run(agent, "帮我看看持仓", session=session)
    assert result.text == "整体健康。" and fns.RAN == ["portfolio diagnose"]
    second = [m.text for m in client.seen[1]]
    assert second[:2] == ["帮我看看持仓", "计划：先读取持仓"]  # the history holds the first answer
    assert 'portfolio(mode="diagnose")' in second[2]


def test_a_retry_without_a_session_passes_the_conversation_again(
    run: Callable[..., Any],
) -> None:
    if run.mode == "stream":  # type: ignore[attr-defined]
        pytest.skip("a streaming run has no required-tool retry")
    guard = loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]})
    client = ScriptedClient(["计划", [("portfolio", {"mode": "diagnose"})], "整体健康。"])
    agent, _ = make_agent(client, guard)
    assert run(agent, "帮我看看持仓").text == "整体健康。"
    assert [m.text for m in client.seen[1]][:2] == ["帮我看看持仓", "计划"]


def test_an_exhausted_retry_ends_with_the_warning(run: Callable[..., Any]) -> None:
    if run.mode == "stream":  # type: ignore[attr-defined]
        pytest.skip("a streaming run has no required-tool retry")
    guard = loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]})
    agent, _ = make_agent(ScriptedClient(["没问题。"], loop=True), guard)
    text = run(agent, "帮我看看持仓", session=agent.create_session()).messages[-1].text
    assert text.endswith("没问题。") and "portfolio" in text


def test_a_breaker_before_the_required_tool_gives_a_retry_with_tools(
    run: Callable[..., Any],
) -> None:
    guard = loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]})
    script: list[Step] = [[("read", {"path": "a"})]] * 4 + [
        [("portfolio", {"mode": "diagnose"})],
        "整体健康。",
    ]
    agent, _ = make_agent(ScriptedClient(script), guard)
    result = run(agent, "帮我看看持仓", session=agent.create_session())
    if run.mode == "stream":  # type: ignore[attr-defined]
        # no second run for a stream: the breaker's text ends it
        assert fns.RAN == ["read a", "read a"]
        stop = result.messages[-1].text  # the portfolio rules speak Chinese
        assert stop.startswith("[loopguard]") and "read was called 3 times" in stop
        return
    assert fns.RAN[-1] == "portfolio diagnose" and result.text == "整体健康。"


def test_the_session_id_is_the_session(run: Callable[..., Any]) -> None:
    agent, lg = make_agent(ScriptedClient([[("read", {"path": "a"})], "ok"] * 2))
    session = agent.create_session()
    run(agent, "read a", session=session)
    run(agent, "read a again", session=session)
    assert [e.tool for e in lg.core.session(session.session_id).history()] == ["read", "read"]
    assert lg.core.session("default").history() == []


def test_in_run_compaction_marks_compaction(
    run: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    compactions: list[str] = []
    original = loopguard.Session.compacted
    monkeypatch.setattr(
        loopguard.Session, "compacted", lambda s: (compactions.append(s.id), original(s))[1]
    )
    script: list[Step] = [[("read", {"path": str(i)})] for i in range(4)] + ["done"]
    agent, _ = make_agent(
        ScriptedClient(script), compaction_strategy=SlidingWindowStrategy(keep_last_groups=2)
    )
    session = agent.create_session()
    assert run(agent, "read four files", session=session).messages[-1].text == "done"
    assert compactions and set(compactions) == {session.session_id}
