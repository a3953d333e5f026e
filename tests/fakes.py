"""A scripted fake model (sync and async) for offline runtime tests.

Each scripted round is an assistant reply: build them with `say(text)` and
`calls(("tool", {"arg": 1}), ...)`, or pass a callable `(messages, tools_enabled) -> reply`.
The model records every request so tests can count model calls and inspect what it saw.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

Reply = Any


def say(text: str | None) -> dict[str, Any]:
    """A text-only assistant round."""
    return {"role": "assistant", "content": text}


def calls(
    *specs: tuple[str, Any], content: str | None = None, ids: Sequence[str] = ()
) -> dict[str, Any]:
    """An assistant round with tool calls; dict arguments are JSON-encoded, strings kept raw.

    Calls without an explicit id get a fresh one from the model on every request.
    """
    tool_calls = []
    for i, (name, args) in enumerate(specs):
        raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        tool_calls.append(
            {
                "id": ids[i] if i < len(ids) else None,
                "type": "function",
                "function": {"name": name, "arguments": raw},
            }
        )
    return {"role": "assistant", "content": content, "tool_calls": tool_calls}


class ScriptedModel:
    """Returns the scripted rounds in order; `repeat_last` keeps returning the last one."""

    def __init__(
        self,
        rounds: Sequence[Reply | Callable[[list[Any], bool], Reply]],
        repeat_last: bool = False,
    ) -> None:
        self.rounds = list(rounds)
        self.repeat_last = repeat_last
        self.requests: list[tuple[list[Any], bool]] = []

    @property
    def calls(self) -> int:
        return len(self.requests)

    def __call__(self, messages: list[Any], tools_enabled: bool = True) -> Reply:
        self.requests.append((list(messages), tools_enabled))
        index = len(self.requests) - 1
        if index >= len(self.rounds):
            if not self.repeat_last:
                raise AssertionError(
                    f"model called {index + 1} times, only {len(self.rounds)} scripted"
                )
            index = len(self.rounds) - 1
        step = self.rounds[index]
        reply = step(messages, tools_enabled) if callable(step) else json.loads(json.dumps(step))
        for i, call in enumerate(reply.get("tool_calls") or []):
            call["id"] = call["id"] or f"call-{len(self.requests)}-{i}"
        return reply


class AsyncScriptedModel(ScriptedModel):
    """The same script behind an async callable."""

    async def __call__(self, messages: list[Any], tools_enabled: bool = True) -> Reply:  # type: ignore[override]
        return ScriptedModel.__call__(self, messages, tools_enabled)


class Portfolio:
    """A fake `portfolio` tool that records its calls."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, args: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(args)
        return {"mode": args.get("mode"), "holdings": [{"code": "600000", "shares": 100}]}
