"""The CrewAI hooks inside a real Crew, offline.

The model is a `BaseLLM` subclass playing a ReAct script; CrewAI's telemetry, tracing
prompt and storage are switched off or sent to a temporary directory. Every test runs
through `Crew.kickoff` and `await Crew.kickoff_async`.
"""

from __future__ import annotations

import os
import sys

import pytest

if sys.version_info >= (3, 14):  # crewai 1.6: Requires-Python <3.14
    pytest.skip("crewai 1.6 supports Python 3.10-3.13", allow_module_level=True)

import asyncio
import gc
import json
import tempfile
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import integration_tools as fns

# CrewAI reads these when it starts: no telemetry, no first-run tracing prompt. Its import
# also writes a key under ~/.local/share: HOME points at a temporary directory meanwhile.
_HOME = tempfile.TemporaryDirectory(prefix="crewai-home-")
_ENV = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "CREWAI_TESTING": "true",
    "HOME": _HOME.name,
    "XDG_DATA_HOME": os.path.join(_HOME.name, "data"),
}
_saved = {k: os.environ.get(k) for k in _ENV}
os.environ.update(_ENV)
try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImportWarning)  # crewai.rag, while it is imported
        import crewai
        from crewai import Agent, Crew, Task
        from crewai.hooks import register_before_llm_call_hook, unregister_before_llm_call_hook
        from crewai.llms.base_llm import BaseLLM
        from crewai.tools import tool

    import loopguard
    from loopguard.integrations.crewai import LoopGuard
finally:
    for _k, _v in _saved.items():
        if _v is None:
            os.environ.pop(_k, None)
        else:
            os.environ[_k] = _v

# CrewAI's task-output storage opens SQLite with `with sqlite3.connect(...)`, which commits
# but never closes; Python 3.13 warns about each such connection when it is freed. The leak
# is CrewAI's own (crewai/memory/storage/kickoff_task_outputs_storage.py), so that one warning
# is ignored here; `_collect_crewai_garbage` frees those connections before the test ends,
# so none is left for a later test's garbage collection to report.
UNCLOSED_CREWAI_DB = "ignore:unclosed database in <sqlite3.Connection:ResourceWarning"
pytestmark = [
    pytest.mark.slow,  # drives the real framework (whose import takes seconds)
    pytest.mark.filterwarnings(UNCLOSED_CREWAI_DB),
]


@pytest.fixture(autouse=True)
def _collect_crewai_garbage() -> Iterator[None]:
    yield
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "unclosed database", ResourceWarning)
        gc.collect()


Step = Any  # a str (the final answer) or a (tool name, args) pair (one ReAct action)


@pytest.fixture(scope="module", autouse=True)
def _crewai_env() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        for key, value in _ENV.items():
            mp.setenv(key, value)
        yield
    _HOME.cleanup()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    fns.RAN.clear()


class ScriptedLLM(BaseLLM):
    """A CrewAI LLM that answers with the next step of a script, in ReAct text."""

    def __init__(self, script: list[Step], loop: bool = False) -> None:
        super().__init__(model="scripted")
        self.script = list(script)
        self.loop = loop
        self.seen: list[list[dict[str, Any]]] = []  # the messages of every call

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        self.seen.append([dict(m) for m in messages])
        step = self.script[0] if self.loop or len(self.script) == 1 else self.script.pop(0)
        if isinstance(step, str):
            return f"Thought: I know the answer\nFinal Answer: {step}"
        name, args_ = step
        return f"Thought: I need {name}\nAction: {name}\nAction Input: {json.dumps(args_)}"

    def supports_function_calling(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 100_000


def failing(path: str) -> str:
    """Always fails."""
    fns.RAN.append(f"failing {path}")
    raise ValueError(f"cannot open {path}")


TOOLS = [tool(f.__name__)(f) for f in (fns.read, fns.write, failing, fns.portfolio)]


def make_crew(llm: ScriptedLLM, role: str = "helper") -> Crew:
    agent = Agent(role=role, goal="help", backstory="helps", llm=llm, tools=TOOLS, max_iter=12)
    task = Task(description="{request}", expected_output="an answer", agent=agent)
    return Crew(agents=[agent], tasks=[task])


@pytest.fixture
def guard(request: pytest.FixtureRequest) -> Iterator[LoopGuard]:
    rules = getattr(request, "param", None)
    lg = LoopGuard(None if rules is None else loopguard.Guard.from_dict(rules)).register()
    yield lg
    lg.unregister()


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest) -> Callable[[Crew, str], str]:
    def go(crew: Crew, request_text: str) -> str:
        inputs = {"request": request_text}
        if request.param == "async":
            return str(asyncio.run(crew.kickoff_async(inputs)).raw)
        return str(crew.kickoff(inputs).raw)

    return go


def seen_text(llm: ScriptedLLM) -> str:
    return "\n".join(str(m["content"]) for m in llm.seen[-1])


PORTFOLIO = {"version": 1, "extends": ["builtin:portfolio"]}


def test_a_looping_model_is_stopped_with_the_breaker_text(
    guard: LoopGuard, run: Callable[[Crew, str], str]
) -> None:
    llm = ScriptedLLM([("read", {"path": "a"})], loop=True)
    out = run(make_crew(llm), "read a")
    assert fns.RAN == ["read a"]  # CrewAI answers an identical repeat itself
    assert out.startswith("[loopguard] Stopped: read was called")
    assert '"status": "blocked"' in seen_text(llm)  # the guard's answer, not CrewAI's text
    assert "Tool execution blocked by hook" not in seen_text(llm)
    assert len(llm.seen) <= 8  # well before the agent's max_iter (12)


def test_a_failing_call_repeated_is_stopped(
    guard: LoopGuard, run: Callable[[Crew, str], str]
) -> None:
    llm = ScriptedLLM([("failing", {"path": "a"})], loop=True)
    crew = make_crew(llm)
    out = run(crew, "open a")
    history = guard.core.session(f"{crew.id}/{crew.agents[0].id}").history()
    ran = [e for e in history if (e.outcome or b"").startswith(b"error:")]
    # Two calls reach the tool, the rest are refused. (CrewAI itself runs a raising tool six
    # times per call: three attempts, each invoking it twice.)
    assert len(ran) == 2 and fns.RAN.count("failing a") == 12
    assert out.startswith("[loopguard] Stopped: failing") and len(llm.seen) <= 5


def test_a_healthy_run_is_untouched(guard: LoopGuard, run: Callable[[Crew, str], str]) -> None:
    script: list[Step] = [("read", {"path": "a"}), ("write", {"path": "b"}), "all done"]
    guard.unregister()
    plain_llm = ScriptedLLM(script)
    expected = run(make_crew(plain_llm), "copy a to b")
    guard.register()
    llm = ScriptedLLM(script)
    got = run(make_crew(llm), "copy a to b")
    assert got == expected == "all done"
    assert fns.RAN == ["read a", "write b"] * 2
    assert llm.seen == plain_llm.seen  # the model saw exactly what it sees without the guard


def test_a_raising_tool_is_recorded_as_a_failure(
    guard: LoopGuard, run: Callable[[Crew, str], str]
) -> None:
    crew = make_crew(ScriptedLLM([("failing", {"path": "a"}), "gave up"]))
    assert run(crew, "open a") == "gave up"
    entry = guard.core.session(f"{crew.id}/{crew.agents[0].id}").history()[-1]
    assert entry.tool == "failing" and (entry.outcome or b"").startswith(b"error:")


@pytest.mark.parametrize("guard", [PORTFOLIO], indirect=True)
def test_a_required_tool_retry_asks_the_model_again(
    guard: LoopGuard, run: Callable[[Crew, str], str]
) -> None:
    llm = ScriptedLLM(["计划：先读取持仓", ("portfolio", {"mode": "diagnose"}), "整体健康。"])
    assert run(make_crew(llm), "帮我看看持仓") == "整体健康。"
    assert fns.RAN == ["portfolio diagnose"]
    asked = [m["content"] for m in llm.seen[1] if m["role"] == "user"]
    assert 'portfolio(mode="diagnose")' in asked[-1]


@pytest.mark.parametrize("guard", [PORTFOLIO], indirect=True)
def test_an_exhausted_retry_ends_with_the_warning(
    guard: LoopGuard, run: Callable[[Crew, str], str]
) -> None:
    out = run(make_crew(ScriptedLLM(["没问题。"], loop=True)), "帮我看看持仓")
    assert out.endswith("没问题。") and "portfolio" in out


@pytest.mark.parametrize("guard", [PORTFOLIO], indirect=True)
def test_a_breaker_before_the_required_tool_gives_a_retry_with_tools(
    guard: LoopGuard, run: Callable[[Crew, str], str]
) -> None:
    script: list[Step] = [("read", {"path": "a"})] * 4 + [
        ("portfolio", {"mode": "diagnose"}),
        "整体健康。",
    ]
    llm = ScriptedLLM(script)
    assert run(make_crew(llm), "帮我看看持仓") == "整体健康。"
    assert fns.RAN[-1] == "portfolio diagnose"
    assert '"status": "error"' in seen_text(llm)


def test_each_crew_and_agent_is_a_session_of_its_own(
    guard: LoopGuard, run: Callable[[Crew, str], str]
) -> None:
    one, two = (make_crew(ScriptedLLM([("read", {"path": "a"}), "ok"])) for _ in range(2))
    run(one, "read a")
    run(two, "read a")
    for crew in (one, two):
        history = guard.core.session(f"{crew.id}/{crew.agents[0].id}").history()
        assert [e.tool for e in history] == ["read"]


def test_a_hook_that_trims_the_messages_marks_compaction(
    run: Callable[[Crew, str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    compactions: list[str] = []
    original = loopguard.Session.compacted
    monkeypatch.setattr(
        loopguard.Session, "compacted", lambda s: (compactions.append(s.id), original(s))[1]
    )

    def keep_recent(ctx: Any) -> None:  # registered first, so loopguard sees its result
        if len(ctx.messages) > 4:
            del ctx.messages[1:-2]

    register_before_llm_call_hook(keep_recent)
    lg = LoopGuard().register()
    try:
        crew = make_crew(ScriptedLLM([("read", {"path": str(i)}) for i in range(4)] + ["done"]))
        assert run(crew, "read four files") == "done"
    finally:
        lg.unregister()
        unregister_before_llm_call_hook(keep_recent)
    assert compactions and set(compactions) == {f"{crew.id}/{crew.agents[0].id}"}


def test_an_agent_run_alone_has_its_calls_refused(guard: LoopGuard) -> None:
    """`Agent.kickoff` without a crew: crewai 1.6 runs the tool hooks there but no LLM hooks,
    so the loop's calls are refused and the model ends the task itself; later releases run
    both, and the breaker ends it."""
    llm = ScriptedLLM([("read", {"path": "a"})] * 6 + ["gave up"])
    agent = Agent(role="alone", goal="help", backstory="helps", llm=llm, tools=TOOLS, max_iter=12)
    out = str(agent.kickoff("read a").raw)
    history = [e.tool for e in guard.core.session(str(agent.id)).history()]
    if crewai.__version__.startswith("1.6."):
        assert fns.RAN == ["read a", "read a"]
        assert out == "gave up" and history == ["read"] * 6
    else:
        assert 1 <= len(fns.RAN) <= 2 and set(fns.RAN) == {"read a"}
        assert out.startswith("[loopguard] Stopped: read") and len(history) < 6
