"""LoopGuardPlugin in a real Google ADK Runner, offline.

The model is a `BaseLlm` subclass (ADK's own model API) playing a script without call ids,
as Gemini sends them; the App, Runner, LlmAgent, function tools and plugin machinery are
ADK's. Every test runs through `Runner.run` (ADK drives its loop on a thread of its own)
and `Runner.run_async`.
"""

from __future__ import annotations

import sys

import pytest

if sys.version_info < (3, 11):  # the framework's own floor (Requires-Python >= 3.11)
    pytest.skip("google-adk 2.13 needs Python 3.11 or newer", allow_module_level=True)

import asyncio
from collections.abc import AsyncGenerator, Callable
from typing import Any

import integration_tools as fns
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.apps.app import EventsCompactionConfig
from google.adk.apps.base_events_summarizer import BaseEventsSummarizer
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from pydantic import Field

import loopguard
from loopguard.integrations.google_adk import LoopGuardPlugin
from loopguard.integrations.google_adk.plugin import RETRY_TOOL

pytestmark = pytest.mark.slow  # drives the real agent framework (whose import takes ~3 s)

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


class ScriptedLlm(BaseLlm):
    """Answers each request with the next step (the last one forever when `loop` is set)."""

    model: str = "scripted"
    script: list[Any]
    loop: bool = False
    calls: int = 0
    requests: list[list[types.Content]] = Field(default_factory=list)
    declared: set[str] = Field(default_factory=set)  # the function names offered to the model

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(list(llm_request.contents))
        for group in llm_request.config.tools or []:
            self.declared |= {f.name for f in group.function_declarations or []}
        step = self.script[min(self.calls, len(self.script) - 1) if self.loop else self.calls]
        self.calls += 1
        if isinstance(step, str):
            parts = [types.Part(text=step)]
        else:
            parts = [types.Part(function_call=types.FunctionCall(name=n, args=a)) for n, a in step]
        usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=0)  # no log line
        yield LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=usage)


def fetch(url: str) -> dict[str, str]:
    """Fetch a URL (it always fails)."""
    fns.RAN.append(f"fetch {url}")
    return {"status": "error", "error": f"connection refused: {url}"}


TOOLS = [fns.read, fns.write, fns.broken, fns.portfolio, fetch]


@pytest.fixture(autouse=True)
def _fresh() -> None:
    fns.RAN.clear()


def runner_for(
    model: ScriptedLlm, plugin: LoopGuardPlugin | None, compaction: Any = None
) -> Runner:
    agent = LlmAgent(name="worker", model=model, tools=TOOLS)
    app = App(
        name="loopguard_test",
        root_agent=agent,
        plugins=[plugin] if plugin is not None else [],
        events_compaction_config=compaction,
    )
    return Runner(app=app, session_service=InMemorySessionService(), auto_create_session=True)


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest) -> Callable[..., list[Event]]:
    def go(runner: Runner, text: str, session: str = "conv") -> list[Event]:
        message = types.Content(role="user", parts=[types.Part(text=text)])
        kw: dict[str, Any] = {"user_id": "u", "session_id": session, "new_message": message}
        if request.param == "sync":
            return list(runner.run(**kw))

        async def collect() -> list[Event]:
            return [e async for e in runner.run_async(**kw)]

        return asyncio.run(collect())

    return go


def responses(events: list[Event]) -> list[types.FunctionResponse]:
    return [r for e in events for r in e.get_function_responses() if r.name != RETRY_TOOL]


def status(response: types.FunctionResponse) -> str:
    return str((response.response or {}).get("status"))


def final_text(events: list[Event]) -> str:
    last = events[-1]
    assert last.is_final_response()
    return "".join(p.text or "" for p in (last.content.parts if last.content else []))


def assert_every_call_answered(events: list[Event]) -> None:
    asked = [c.id for e in events for c in e.get_function_calls()]
    answered = [r.id for e in events for r in e.get_function_responses()]
    assert sorted(asked) == sorted(answered) and len(set(answered)) == len(answered)


def test_a_looping_model_is_stopped_with_the_breaker_text(run: Callable[..., Any]) -> None:
    model = ScriptedLlm(script=[[("read", {"path": "a"})]], loop=True)
    events = run(runner_for(model, LoopGuardPlugin()), "read a")
    assert fns.RAN == ["read a", "read a"]
    assert [status(r) for r in responses(events)[2:]] == ["blocked", "error"]
    assert final_text(events).startswith("[loopguard] Stopped: read was called 3 times")
    assert model.calls == 4  # the model is not asked again once the breaker closed the tools
    assert_every_call_answered(events)


def test_a_failing_call_repeated_five_times_runs_at_most_twice(run: Callable[..., Any]) -> None:
    script: list[Step] = [[("fetch", {"url": "http://x"})]] * 5 + ["gave up"]
    events = run(runner_for(ScriptedLlm(script=script), LoopGuardPlugin()), "fetch x")
    assert fns.RAN == ["fetch http://x"] * 2  # the third is blocked, the fourth trips the breaker
    assert final_text(events).startswith("[loopguard] Stopped:")
    assert_every_call_answered(events)


def test_a_healthy_run_is_untouched(run: Callable[..., Any]) -> None:
    script: list[Step] = [[("read", {"path": "a"})], [("write", {"path": "b"})], "all done"]
    plain_model, guarded_model = ScriptedLlm(script=script), ScriptedLlm(script=script)
    plain = run(runner_for(plain_model, None), "copy a to b")
    guarded = run(runner_for(guarded_model, LoopGuardPlugin()), "copy a to b")

    def shape(events: list[Event]) -> list[Any]:
        return [
            (
                e.author,
                [(p.text, p.function_call and p.function_call.name) for p in e.content.parts or []]
                if e.content
                else None,
                [(r.name, r.response) for r in e.get_function_responses()],
            )
            for e in events
        ]

    assert shape(guarded) == shape(plain)
    assert guarded_model.declared == plain_model.declared == {t.__name__ for t in TOOLS}
    assert final_text(guarded) == "all done"
    assert fns.RAN == ["read a", "write b"] * 2


def test_parallel_calls_one_blocked_the_rest_aborted(run: Callable[..., Any]) -> None:
    loop = [("read", {"path": "a"})]
    batch = [("read", {"path": "a"}), ("write", {"path": "x"}), ("write", {"path": "y"})]
    model = ScriptedLlm(script=[loop, loop, loop, batch, "unused"])
    events = run(runner_for(model, LoopGuardPlugin()), "read a")
    assert [status(r) for r in responses(events)[-3:]] == ["error", "aborted", "aborted"]
    assert not any(r.startswith("write") for r in fns.RAN)
    assert final_text(events).startswith("[loopguard] Stopped:")
    assert model.calls == 4
    assert_every_call_answered(events)


def test_a_raising_tool_is_recorded_and_re_raised(run: Callable[..., Any]) -> None:
    plugin = LoopGuardPlugin()
    runner = runner_for(ScriptedLlm(script=[[("broken", {"path": "a"})], "unused"]), plugin)
    with pytest.raises(ValueError, match="cannot open a"):
        run(runner, "open a")
    entry = plugin.core.session("conv").history()[-1]
    assert entry.tool == "broken" and (entry.outcome or b"").startswith(b"error:")


def test_a_warning_note_goes_into_the_tool_response(run: Callable[..., Any]) -> None:
    guard = loopguard.Guard.from_dict(WARN_AT_2)
    script: list[Step] = [[("read", {"path": "a"})]] * 3 + ["done"]
    events = run(runner_for(ScriptedLlm(script=script), LoopGuardPlugin(guard)), "read a")
    first, second, third = (r.response for r in responses(events))
    assert first == second == {"result": "same content"}
    assert str((third or {})["result"]).startswith(
        "same content\n\n[loopguard] Warning: read was already called 2 times"
    )
    assert final_text(events) == "done"


def test_a_required_tool_retry_asks_the_model_again(run: Callable[..., Any]) -> None:
    script: list[Step] = ["计划：先读取持仓", [("portfolio", {"mode": "diagnose"})], "整体健康。"]
    model = ScriptedLlm(script=script)
    plugin = LoopGuardPlugin(loopguard.Guard.from_dict(PORTFOLIO))
    events = run(runner_for(model, plugin), "帮我看看持仓")
    answers = [r for e in events for r in e.get_function_responses()]
    prompts = [r.response for r in answers if r.name == RETRY_TOOL]
    assert len(prompts) == 1 and 'portfolio(mode="diagnose")' in str(prompts[0])
    # the model saw its own text, then the retry prompt as the tool response
    seen = model.requests[1][-1].parts or []
    assert seen[0].function_response is not None and seen[0].function_response.name == RETRY_TOOL
    assert fns.RAN == ["portfolio diagnose"] and final_text(events) == "整体健康。"
    assert_every_call_answered(events)


def test_an_exhausted_retry_ends_with_the_warning(run: Callable[..., Any]) -> None:
    plugin = LoopGuardPlugin(loopguard.Guard.from_dict(PORTFOLIO))
    events = run(runner_for(ScriptedLlm(script=["没问题。"], loop=True), plugin), "帮我看看持仓")
    text = final_text(events)
    assert text.endswith("没问题。") and "portfolio" in text and text != "没问题。"


def test_a_breaker_before_the_required_tool_gives_a_retry_with_tools(
    run: Callable[..., Any],
) -> None:
    script: list[Step] = [[("read", {"path": "a"})]] * 4 + [
        [("portfolio", {"mode": "diagnose"})],
        "整体健康。",
    ]
    plugin = LoopGuardPlugin(loopguard.Guard.from_dict(PORTFOLIO))
    events = run(runner_for(ScriptedLlm(script=script), plugin), "帮我看看持仓")
    assert fns.RAN[-1] == "portfolio diagnose" and final_text(events) == "整体健康。"
    assert "error" in [status(r) for r in responses(events)]
    assert_every_call_answered(events)


def test_the_adk_session_is_the_session(run: Callable[..., Any]) -> None:
    plugin = LoopGuardPlugin()
    model = ScriptedLlm(script=[[("read", {"path": "a"})], "ok"] * 3)
    runner = runner_for(model, plugin)
    run(runner, "read a", session="c1")
    run(runner, "read a again", session="c1")
    run(runner, "read a elsewhere", session="c2")
    assert [e.tool for e in plugin.core.session("c1").history()] == ["read", "read"]
    assert [e.tool for e in plugin.core.session("c2").history()] == ["read"]


class OneLineSummarizer(BaseEventsSummarizer):
    """A summarizer that needs no model: the compacted range becomes one line."""

    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        summary = types.Content(role="model", parts=[types.Part(text="(earlier turns)")])
        compaction = EventCompaction(
            start_timestamp=events[0].timestamp,
            end_timestamp=events[-1].timestamp,
            compacted_content=summary,
        )
        return Event(author="user", actions=EventActions(compaction=compaction))


@pytest.mark.filterwarnings("ignore:.EXPERIMENTAL.:UserWarning")  # ADK's compaction API
def test_an_adk_compaction_marks_the_session_compacted(
    run: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    compactions: list[str] = []
    original = loopguard.Session.compacted
    monkeypatch.setattr(
        loopguard.Session, "compacted", lambda s: (compactions.append(s.id), original(s))[1]
    )
    config = EventsCompactionConfig(
        summarizer=OneLineSummarizer(), compaction_interval=1, overlap_size=0
    )
    model = ScriptedLlm(script=[[("read", {"path": "1"})], "one", [("read", {"path": "2"})], "two"])
    runner = runner_for(model, LoopGuardPlugin(), compaction=config)
    run(runner, "read 1")
    assert compactions == []
    run(runner, "read 2")  # the first turn was compacted after it ended
    assert compactions == ["conv"]
