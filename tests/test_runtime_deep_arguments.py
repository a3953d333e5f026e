"""`run_turn` and `arun_turn` take arguments nested arbitrarily deep (issue 22, item 14).

A model that sends `"[" * 100000 + "]" * 100000` as a call's arguments made a RecursionError
escape `run_turn`. Arguments text too deep for the JSON parser is refused like any other
unusable arguments: the tool is not called and the model gets an error result; arguments the
model client already parsed into deep dicts, and deep tool results, go through as they are.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fakes import say

import loopguard
from loopguard.runtime.loop import TurnResult, arun_turn, run_turn


def _deep_dict(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"a": value}
    return value


def _drive(mode: str, arguments: Any, tool: Any) -> TurnResult:
    """One turn: a call of `t` with `arguments` (text sent as is, else an already parsed
    mapping), then a text answer. The model keeps nothing of what it is sent."""
    call = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": arguments}}
    rounds = [{"role": "assistant", "content": None, "tool_calls": [call]}, say("done")]

    def model(messages: Any, tools_enabled: bool = True) -> Any:
        return rounds.pop(0)

    session = loopguard.Guard.default().session("deep")
    messages = [{"role": "user", "content": "go"}]
    if mode == "sync":
        return run_turn(model, {"t": tool}, messages, session)

    async def async_model(messages: Any, tools_enabled: bool = True) -> Any:
        return model(messages, tools_enabled)

    async def async_tool(args: Any) -> Any:
        return tool(args)

    return asyncio.run(arun_turn(async_model, {"t": async_tool}, messages, session))


def _tool_results(result: TurnResult) -> list[str]:
    return [str(m.get("content")) for m in result.messages if m.get("role") == "tool"]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    "text",
    ["[" * 100_000 + "]" * 100_000, '{"a":' * 5_000 + "1" + "}" * 5_000],
    ids=["array-100000", "object-5000"],
)
def test_arguments_text_too_deep_is_an_error_result(mode: str, text: str) -> None:
    ran: list[Any] = []
    result = _drive(mode, text, ran.append)
    assert ran == []  # the tool never saw them
    assert result.text == "done"
    (content,) = _tool_results(result)
    assert "unusable arguments: nested too deeply" in content


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_deep_parsed_arguments_and_results_go_through(mode: str) -> None:
    deep = _deep_dict(5_000)
    seen: list[Any] = []

    def tool(args: Any) -> Any:
        seen.append(args)
        return _deep_dict(5_000)  # a result as deep

    result = _drive(mode, deep, tool)
    assert seen and seen[0] is not None
    assert result.text == "done"
    assert len(_tool_results(result)) == 1


def test_arguments_the_parser_can_read_still_reach_the_tool() -> None:
    seen: list[Any] = []
    text = json.dumps(_deep_dict(200))
    result = _drive("sync", text, seen.append)
    assert seen == [_deep_dict(200)]
    assert result.text == "done"
