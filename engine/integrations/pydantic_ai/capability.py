"""`LoopGuard`: loopguard as a pydantic-ai capability.

- `before_run`: `begin_turn` with the conversation so far and the new prompt.
- `after_model_request`: a response with tool calls is one batch, decided here in the
  model's order (pydantic-ai runs parallel calls as concurrent tasks); a response without
  calls goes to `finish_round`, and a retry raises `ModelRetry` with the retry prompt (it
  counts against the agent's output retries: give the agent `retries` (or
  `output_retries`) of at least the rules' `turn.max_incomplete_tool_retries`, default 2).
  A request whose messages no longer start with the previous request's messages means
  a history processor rewrote (compacted) the context: `compacted()`.
- `before_tool_execute`: a blocked or aborted call is skipped (`SkipToolExecution`) with
  the guard's tool result as its result.
- `after_tool_execute` / `on_tool_execute_error`: `after_call`; a shown note is appended to
  the result (which the model then sees as text); an error is recorded and re-raised.
- `before_model_request`: once a breaker closed the tools, the model is not called again:
  the run ends with the final answer (`SkipModelRequest`), or a required-tool retry is
  requested (`ModelRetry`).

The session is the run's `conversation_id` (pydantic-ai carries it in the message
history); `run_id` stays unset unless given.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import messages as pm
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelRetry, SkipModelRequest, SkipToolExecution

from loopguard.decision import Decision
from loopguard.integrations._core import GuardCore, _bound
from loopguard.session import answers
from loopguard.session.guard import Guard


@dataclass
class LoopGuard(AbstractCapability[Any]):
    """Keeps a pydantic-ai agent out of tool-call loops (see the module docstring)."""

    guard: Guard | None = None
    agent: str | None = None
    run_id: str | None = None
    tools: Iterable[str] | None = None
    core: GuardCore = field(init=False, repr=False)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)
    _decided: dict[tuple[str, str], Decision] = field(init=False, repr=False, default_factory=dict)
    _sent: dict[str, list[Any]] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.core = GuardCore(self.guard, self.agent, self.run_id)
        self.tools = None if self.tools is None else list(self.tools)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a Guard: not spec-serializable

    # -- run and model hooks ---------------------------------------------------
    async def before_run(self, ctx: Any) -> None:
        messages = openai_messages(ctx.messages)
        if isinstance(ctx.prompt, str) and ctx.prompt:
            messages.append({"role": "user", "content": ctx.prompt})
        self.core.begin_turn(_sid(ctx), messages, self.tools)

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        sid = _sid(ctx)
        if not self.core.closed(sid):
            return request_context
        ending = self.core.ending(sid, _latest_text(request_context.messages))
        if ending.retry is not None:
            raise ModelRetry(ending.retry)
        raise SkipModelRequest(pm.ModelResponse(parts=[pm.TextPart(ending.text)]))

    async def after_model_request(self, ctx: Any, *, request_context: Any, response: Any) -> Any:
        sid = _sid(ctx)
        self._note_compaction(sid, list(request_context.messages))
        calls = [p for p in response.parts if isinstance(p, pm.ToolCallPart)]
        if calls:
            self.core.begin_round(sid)
            for part in calls:
                decision = self.core.before(
                    sid, part.tool_name, part.args_as_dict(), part.tool_call_id
                )
                with self._lock:
                    self._decided[(sid, part.tool_call_id)] = decision
                    _bound(self._decided)
            return response
        text = "".join(p.content for p in response.parts if isinstance(p, pm.TextPart))
        outcome = self.core.finish(sid, text)
        if outcome.action == "retry":
            raise ModelRetry(outcome.message or "")
        if (outcome.text or "") != text:
            others = [p for p in response.parts if not isinstance(p, pm.TextPart)]
            response.parts = [*others, pm.TextPart(outcome.text or "")]
        return response

    # -- tool hooks --------------------------------------------------------------
    async def before_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
        sid = _sid(ctx)
        with self._lock:
            decision = self._decided.pop((sid, call.tool_call_id), None)
        if decision is None:  # a call this capability did not see leave the model
            decision = self.core.before(sid, call.tool_name, _plain(args), call.tool_call_id)
        refused = answers.tool_result(decision)
        if refused is not None:
            raise SkipToolExecution(refused)
        return args

    async def after_tool_execute(
        self, ctx: Any, *, call: Any, tool_def: Any, args: Any, result: Any
    ) -> Any:
        decisions = self.core.after(
            _sid(ctx), call.tool_name, _plain(args), call.tool_call_id, result=result
        )
        if not any(answers.note_shown(d) for d in decisions):
            return result
        return answers.with_notes(answers.result_text(result), decisions)

    async def on_tool_execute_error(
        self, ctx: Any, *, call: Any, tool_def: Any, args: Any, error: Exception
    ) -> Any:
        self.core.after(
            _sid(ctx),
            call.tool_name,
            _plain(args),
            call.tool_call_id,
            error=answers.error_text(error),
        )
        raise error

    # -- internals ---------------------------------------------------------------
    def _note_compaction(self, sid: str, sent: list[Any]) -> None:
        """The history sent no longer starts with what was sent last time: it was compacted."""
        with self._lock:
            last = self._sent.get(sid)
            self._sent[sid] = sent
            _bound(self._sent)
        if last is not None and sent[: len(last)] != last:
            self.core.session(sid).compacted()


def _sid(ctx: Any) -> str:
    return str(ctx.conversation_id or "default")


def _plain(args: Any) -> Any:
    """Validated arguments as plain data (a pydantic model is dumped)."""
    dump = getattr(args, "model_dump", None)
    return dump() if callable(dump) else args


def _latest_text(messages: Sequence[Any]) -> str | None:
    """The newest non-empty model text since the last user prompt."""
    for message in reversed(messages):
        if isinstance(message, pm.ModelRequest) and any(
            isinstance(p, pm.UserPromptPart) for p in message.parts
        ):
            return None
        if isinstance(message, pm.ModelResponse):
            text = "".join(p.content for p in message.parts if isinstance(p, pm.TextPart))
            if text.strip():
                return text
    return None


def openai_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """pydantic-ai messages as OpenAI-shaped dicts (user and assistant text), for `begin_turn`."""
    out: list[dict[str, Any]] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, pm.UserPromptPart):
                content = part.content
                text = (
                    content
                    if isinstance(content, str)
                    else "".join(c for c in content if isinstance(c, str))
                )
                out.append({"role": "user", "content": text})
            elif isinstance(part, pm.TextPart):
                out.append({"role": "assistant", "content": part.content})
    return out
