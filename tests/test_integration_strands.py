"""LoopGuardHooks in a real Strands Agents agent, offline.

The model is a `strands.models.Model` subclass streaming scripted responses in Strands' own
event format (fresh tool-use ids every round); the Agent, event loop, concurrent tool
executor and hook registry are Strands'. Every test runs through `agent(...)` and
`await agent.invoke_async(...)`.

strands-agents 1.62 pins `mcp<2.2`, and the test extra has `mcp>=2.3` (loopguard's MCP
proxy), so it is not in the test extra: this module runs where `loopguard-engine[strands]`
is installed on its own (.ci/run does so in an environment of its own) and skips elsewhere.
"""

from __future__ import annotations

from importlib.util import find_spec

import pytest

if find_spec("strands") is None:
    pytest.skip(
        "strands-agents is not in the test extra (it needs mcp<2.2): "
        'pip install ".[strands]" pytest hypothesis in an environment of its own',
        allow_module_level=True,
    )

import asyncio
import itertools
import json
from collections.abc import AsyncGenerator, Callable
from typing import Any

import integration_tools as fns
from strands import Agent, tool
from strands.agent.conversation_manager import SlidingWindowConversationManager
from strands.models.model import Model

import loopguard
from loopguard.integrations.strands import LoopGuardHooks

pytestmark = pytest.mark.slow  # drives the real agent framework (whose import takes ~2 s)

Step = Any  # a str (an answer) or a list of (tool name, args) pairs (one batch)
PORTFOLIO = {"version": 1, "extends": ["builtin:portfolio"]}
WARN_AT_2 = {
    "version": 1,
    "loop_detection": {
        "enabled": True,
        "warning_threshold": 2,
        "critical_threshold": 5,
        "global_circuit_breaker_threshold": 8,
    },
    "detectors": {
        "doom_loop_exact": {"enabled": False},
        "doom_loop_fuzzy": {"enabled": False},
        "cycle": {"enabled": False},
    },
}


class ScriptedModel(Model):
    """Streams the next step of `script` (the last one forever when `loop` is set)."""

    def __init__(self, script: list[Step], loop: bool = False) -> None:
        self.script = script
        self.loop = loop
        self.calls = 0
        self.requests: list[list[Any]] = []
        self._ids = itertools.count(1)

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> dict[str, Any]:
        return {}

    async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        raise NotImplementedError
        yield

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncGenerator[dict[str, Any], None]:
        self.requests.append(json.loads(json.dumps(messages, default=str)))
        index = min(self.calls, len(self.script) - 1) if self.loop else self.calls
        step, self.calls = self.script[index], self.calls + 1
        yield {"messageStart": {"role": "assistant"}}
        if isinstance(step, str):
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": step}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        for name, args in step:
            start = {"toolUse": {"toolUseId": f"call_{next(self._ids)}", "name": name}}
            yield {"contentBlockStart": {"start": start}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
            yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


TOOLS = [tool(fns.read), tool(fns.write), tool(fns.broken), tool(fns.portfolio)]


@pytest.fixture(autouse=True)
def _fresh() -> None:
    fns.RAN.clear()


def agent_for(model: ScriptedModel, hooks: LoopGuardHooks | None, **kw: Any) -> Agent:
    return Agent(
        model=model,
        tools=TOOLS,
        hooks=[hooks] if hooks is not None else [],
        callback_handler=None,
        **kw,
    )


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest) -> Callable[..., Any]:
    def go(agent: Agent, prompt: str) -> Any:
        if request.param == "sync":
            return agent(prompt)
        return asyncio.run(agent.invoke_async(prompt))

    return go


def results(agent: Agent) -> list[dict[str, Any]]:
    return [b["toolResult"] for m in agent.messages for b in m["content"] if "toolResult" in b]


def text_of(result: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in result["content"])


def status(result: dict[str, Any]) -> str:
    """The guard's status for a refused call, else the tool result's own status."""
    text = text_of(result)
    return str(json.loads(text)["status"]) if text.startswith("{") else str(result["status"])


def answer(result: Any) -> str:
    return "".join(b.get("text", "") for b in result.message["content"])


def assert_every_call_answered(agent: Agent) -> None:
    asked = [
        b["toolUse"]["toolUseId"] for m in agent.messages for b in m["content"] if "toolUse" in b
    ]
    answered = [r["toolUseId"] for r in results(agent)]
    assert sorted(asked) == sorted(answered) and len(set(answered)) == len(answered)


def test_a_looping_model_is_stopped_with_the_breaker_text(run: Callable[..., Any]) -> None:
    model = ScriptedModel([[("read", {"path": "a"})]], loop=True)
    agent = agent_for(model, LoopGuardHooks())
    result = run(agent, "read a")
    assert fns.RAN == ["read a", "read a"]
    assert [status(r) for r in results(agent)[2:]] == ["blocked", "error"]
    assert [r["status"] for r in results(agent)[2:]] == ["error", "error"]  # Strands' own status
    assert answer(result).startswith("[loopguard] Stopped: read was called 3 times")
    assert model.calls == 4 and result.stop_reason == "end_turn"
    assert_every_call_answered(agent)


def test_a_failing_call_repeated_five_times_runs_at_most_twice(run: Callable[..., Any]) -> None:
    script: list[Step] = [[("broken", {"path": "a"})]] * 5 + ["gave up"]
    model = ScriptedModel(script)
    agent = agent_for(model, LoopGuardHooks())
    result = run(agent, "open a")
    first, second = results(agent)[:2]  # the tool raised: Strands shows the model the error
    assert text_of(first) == text_of(second) == "Error: cannot open a"
    assert [status(r) for r in results(agent)[2:]] == ["blocked", "error"]
    assert answer(result).startswith("[loopguard] Stopped: broken was called 3 times")
    assert model.calls == 4
    assert_every_call_answered(agent)


def test_a_healthy_run_is_untouched(run: Callable[..., Any]) -> None:
    script: list[Step] = [[("read", {"path": "a"})], [("write", {"path": "b"})], "all done"]
    plain, guarded = (
        agent_for(ScriptedModel(script), None),
        agent_for(ScriptedModel(script), LoopGuardHooks()),
    )
    expected, got = run(plain, "copy a to b"), run(guarded, "copy a to b")

    def shape(agent: Agent) -> list[Any]:
        return [(m["role"], list(m["content"])) for m in agent.messages]

    assert shape(guarded) == shape(plain)
    assert answer(got) == answer(expected) == "all done"
    assert fns.RAN == ["read a", "write b"] * 2


def test_parallel_calls_one_blocked_the_rest_aborted(run: Callable[..., Any]) -> None:
    loop = [("read", {"path": "a"})]
    batch = [("read", {"path": "a"}), ("write", {"path": "x"}), ("write", {"path": "y"})]
    model = ScriptedModel([loop, loop, loop, batch, "unused"])
    agent = agent_for(model, LoopGuardHooks())
    result = run(agent, "read a")
    last = {r["toolUseId"]: status(r) for r in results(agent)[-3:]}
    assert last == {"call_4": "error", "call_5": "aborted", "call_6": "aborted"}
    assert not any(r.startswith("write") for r in fns.RAN)
    assert answer(result).startswith("[loopguard] Stopped:") and model.calls == 4
    assert_every_call_answered(agent)


def test_a_raising_tool_is_recorded_as_a_failure(run: Callable[..., Any]) -> None:
    hooks = LoopGuardHooks()
    agent = agent_for(ScriptedModel([[("broken", {"path": "a"})], "could not open it"]), hooks)
    result = run(agent, "open a")
    assert answer(result) == "could not open it"
    entry = hooks.core.session(agent.session_id).history()[-1]
    assert entry.tool == "broken" and (entry.outcome or b"").startswith(b"error:")


def test_a_warning_note_is_appended_to_the_tool_result(run: Callable[..., Any]) -> None:
    hooks = LoopGuardHooks(loopguard.Guard.from_dict(WARN_AT_2))
    agent = agent_for(ScriptedModel([[("read", {"path": "a"})]] * 3 + ["done"]), hooks)
    result = run(agent, "read a three times")
    first, second, third = results(agent)
    assert first["content"] == second["content"] == [{"text": "same content"}]
    assert third["content"][0] == {"text": "same content"}
    assert third["content"][1]["text"].startswith("[loopguard] Warning: read was already called 2")
    assert answer(result) == "done"


def test_a_required_tool_retry_asks_the_model_again(run: Callable[..., Any]) -> None:
    script: list[Step] = ["计划：先读取持仓", [("portfolio", {"mode": "diagnose"})], "整体健康。"]
    model = ScriptedModel(script)
    agent = agent_for(model, LoopGuardHooks(loopguard.Guard.from_dict(PORTFOLIO)))
    result = run(agent, "帮我看看持仓")
    users = [m for m in agent.messages if m["role"] == "user" and "text" in m["content"][0]]
    assert len(users) == 2 and 'portfolio(mode="diagnose")' in users[1]["content"][0]["text"]
    assert model.requests[1][-1]["content"] == users[1]["content"]  # asked again with it
    assert fns.RAN == ["portfolio diagnose"] and answer(result) == "整体健康。"


def test_an_exhausted_retry_ends_with_the_warning(run: Callable[..., Any]) -> None:
    agent = agent_for(
        ScriptedModel(["没问题。"], loop=True), LoopGuardHooks(loopguard.Guard.from_dict(PORTFOLIO))
    )
    text = answer(run(agent, "帮我看看持仓"))
    assert text.endswith("没问题。") and "portfolio" in text and text != "没问题。"
    assert agent.messages[-1]["content"][-1]["text"] == text  # the history keeps what was shown


def test_a_breaker_before_the_required_tool_gives_a_retry_with_tools(
    run: Callable[..., Any],
) -> None:
    script: list[Step] = [[("read", {"path": "a"})]] * 4 + [
        [("portfolio", {"mode": "diagnose"})],
        "整体健康。",
    ]
    agent = agent_for(ScriptedModel(script), LoopGuardHooks(loopguard.Guard.from_dict(PORTFOLIO)))
    result = run(agent, "帮我看看持仓")
    assert fns.RAN[-1] == "portfolio diagnose" and answer(result) == "整体健康。"
    assert "error" in [status(r) for r in results(agent)]
    retried = [
        b["text"]
        for m in agent.messages
        if m["role"] == "user"
        for b in m["content"]
        if "text" in b
    ]
    assert any('portfolio(mode="diagnose")' in t for t in retried[1:])
    assert_every_call_answered(agent)


def test_the_agents_session_id_is_the_session(run: Callable[..., Any]) -> None:
    hooks = LoopGuardHooks()
    one = agent_for(ScriptedModel([[("read", {"path": "a"})], "ok"] * 2), hooks)
    other = agent_for(ScriptedModel([[("read", {"path": "a"})], "ok"]), hooks)
    run(one, "read a")
    run(one, "read a again")
    run(other, "read a")
    assert one.session_id != other.session_id
    assert [e.tool for e in hooks.core.session(one.session_id).history()] == ["read", "read"]
    assert [e.tool for e in hooks.core.session(other.session_id).history()] == ["read"]


def test_a_sliding_window_that_drops_messages_marks_compaction(
    run: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    compactions: list[str] = []
    original = loopguard.Session.compacted
    monkeypatch.setattr(
        loopguard.Session, "compacted", lambda s: (compactions.append(s.id), original(s))[1]
    )
    script: list[Step] = [[("read", {"path": "1"})], "one", [("read", {"path": "2"})], "two"]
    manager = SlidingWindowConversationManager(window_size=4)
    agent = agent_for(ScriptedModel(script), LoopGuardHooks(), conversation_manager=manager)
    run(agent, "read 1")
    assert compactions == [] and manager.removed_message_count == 0
    run(agent, "read 2")  # four messages after the first turn: the second turn overflows
    assert manager.removed_message_count > 0
    assert compactions == [agent.session_id]  # seen when the turn's trimming is done
