"""Properties of run_turn over random scripts: it never crashes and every call id is answered."""

from __future__ import annotations

import itertools
from typing import Any

from fakes import ScriptedModel, calls, say
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import loopguard
from loopguard.runtime.loop import run_turn

# builtin:portfolio exercises required tools and retries; the default rules have no intents.
GUARDS = (loopguard.Guard.default(), loopguard.Guard.from_file("builtin:portfolio"))
IDS = itertools.count()

arguments = st.one_of(
    st.sampled_from([{}, {"q": "x"}, {"mode": "view"}, {"mode": "diagnose"}]),
    st.sampled_from(["{bad json", "[1]", "", "null", '{"q": "x"}']),
)
tool_call = st.tuples(st.sampled_from(["search", "portfolio", "boom", "missing"]), arguments)
round_ = st.one_of(
    st.builds(say, st.sampled_from(["", None, "计划：1. 先查 2. 再答", "答案", "done"])),
    st.lists(tool_call, min_size=1, max_size=3).map(lambda specs: calls(*specs)),
)


def _boom(args: dict[str, Any]) -> Any:
    raise ValueError("boom")


TOOLS = {
    "search": lambda a: {"hits": 1},
    "portfolio": lambda a: {"mode": a.get("mode")},
    "boom": _boom,
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    script=st.lists(round_, min_size=1, max_size=8),
    question=st.sampled_from(["帮我看看持仓", "我有什么持仓", "hello", "做个体检"]),
    guard=st.sampled_from(GUARDS),
    offered=st.booleans(),
)
def test_every_call_is_answered_and_the_turn_ends(
    script: list[Any], question: str, guard: loopguard.Guard, offered: bool
) -> None:
    session = guard.session(f"prop-{next(IDS)}")
    model = ScriptedModel(script, repeat_last=True)
    tools = TOOLS if offered else {k: v for k, v in TOOLS.items() if k != "portfolio"}
    result = run_turn(model, tools, [{"role": "user", "content": question}], session)
    cap = session.config["turn"]["max_tool_rounds"]
    assert isinstance(result.text, str)
    assert 1 <= model.calls <= cap and result.model_calls == model.calls
    asked = [
        c["id"]
        for m in result.messages
        if m["role"] == "assistant"
        for c in m.get("tool_calls", [])
    ]
    answered = [m["tool_call_id"] for m in result.messages if m["role"] == "tool"]
    assert sorted(asked) == sorted(answered)
    if not result.stopped:
        assert result.messages[-1]["role"] == "assistant"
        assert not [m for m in result.messages if m["role"] == "user"]
    last = result.events[-1]
    if last.kind == "stop":  # the round cap
        assert result.stopped
    else:  # a finish: stopped exactly when a breaker ended the turn
        assert last.kind == "finish"
        assert result.stopped == (last.detail == "breaker") or last.detail == "exhausted"
        if result.stopped:
            assert [e for e in result.events if e.decision and e.decision.action == "breaker"]
    if not offered:  # a required tool the agent does not offer is no requirement
        assert session.expectation is None and not [e for e in result.events if e.kind == "retry"]
