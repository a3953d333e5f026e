"""`LoopGuard`: loopguard as Microsoft Agent Framework middleware.

`Agent(client=..., tools=..., middleware=LoopGuard().middleware)` installs three members
that share one GuardCore:

- agent middleware: a run is a turn (`begin_turn` with the run's input). When the run
  ends, its final answer goes to `finish_round`; a required-tool retry is a second run
  with the retry prompt (with a session its history holds the first answer; without one
  the first run's input and messages are passed again), and an exhausted retry's warning
  is put in front of the answer.
- chat middleware (around each model call of the function-calling loop): a response
  with function calls is one batch, decided here in the model's order (the loop runs a
  batch's calls concurrently). Once a breaker closed the tools, the model is not called:
  the response is the final answer (the loop ends), or an empty one when a required-tool
  retry follows. A model call after which more messages are excluded than before (an
  in-run `compaction_strategy` excluded or summarized some) calls `compacted()`.
- function middleware: a blocked or aborted call is not run; its result is the guard's
  tool result. A result is recorded with `after_call` and carries a shown note; a tool
  that raises is recorded with `after_call(error=...)` and the exception re-raised (the
  loop turns it into its usual error result).

The session is the `AgentSession`'s `session_id` ("default" for a run without one).
Streaming runs (`stream=True`) are guarded call by call (decided when each call starts)
and ended by the breaker, but get no required-tool retry.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from agent_framework import (
    AgentContext,
    AgentMiddleware,
    ChatContext,
    ChatMiddleware,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationContext,
    FunctionMiddleware,
    Message,
    ResponseStream,
)

from loopguard.integrations._core import GuardCore, Options, _bound
from loopguard.session import answers
from loopguard.session.guard import Guard

if TYPE_CHECKING:
    from typing_extensions import Unpack

EXCLUDED = "_excluded"  # Message.additional_properties flag of the framework's compaction
Next = Callable[[], Awaitable[None]]


class LoopGuard:
    """Keeps Agent Framework agents out of tool-call loops (see the module docstring)."""

    def __init__(self, guard: Guard | None = None, **options: Unpack[Options]) -> None:
        self.core = GuardCore(guard, **options)
        self._lock = threading.Lock()
        self._retry: dict[str, str] = {}
        self._ended: dict[str, bool] = {}
        self.middleware: list[Any] = [_Turns(self), _Responses(self), _Calls(self)]

    # -- the run (agent middleware) ---------------------------------------------
    async def run(self, ctx: AgentContext, call_next: Next) -> None:
        sid = _sid(ctx.session)
        with self._lock:
            self._retry.pop(sid, None)
            self._ended.pop(sid, None)
        sent = list(ctx.messages)
        self.core.begin_turn(sid, openai_messages(sent))
        if ctx.stream:  # no second run for a stream: its answer is settled when it ends
            ctx.stream_result_hooks.append(lambda response: self._settle(sid, response, False))
        await call_next()
        while not ctx.stream and ctx.result is not None:
            retry = self._settle(sid, ctx.result)
            if retry is None:
                return
            prompt = Message(role="user", contents=[retry])
            ctx.messages = (
                [prompt] if ctx.session is not None else [*sent, *ctx.result.messages, prompt]
            )
            sent = list(ctx.messages)
            await call_next()

    def _settle(self, sid: str, result: Any, can_retry: bool = True) -> str | None:
        """The run ended: a retry prompt for another run, or None (the answer settled)."""
        with self._lock:
            retry = self._retry.pop(sid, None)
            ended = self._ended.pop(sid, False)
        if retry is not None:
            return retry
        if ended:  # the chat middleware ended it after a breaker: finish_round already ran
            return None
        last = result.messages[-1] if result.messages else None
        text = last.text if last is not None and last.role == "assistant" else None
        outcome = self.core.finish(sid, text)
        if outcome.action == "retry" and can_retry:
            return outcome.message or ""
        if last is not None and text is not None and outcome.text not in (None, text):
            result.messages[-1] = Message(role="assistant", contents=[outcome.text or ""])
        return None

    # -- each model call (chat middleware) ---------------------------------------
    async def model_call(self, ctx: ChatContext, call_next: Next) -> None:
        sid = _sid(ctx.session)
        if self.core.closed(sid):
            breaker, latest = self.core.breaker(sid), _latest_text(ctx.messages)
            ending = self.core.ending(sid, latest)
            text = ending.text
            with self._lock:
                if ending.retry is not None and not ctx.stream:
                    self._retry[sid] = ending.retry
                    text = ""
                else:
                    self._ended[sid] = True
                _bound(self._retry)
                _bound(self._ended)
            if ending.retry is not None and ctx.stream and breaker is not None:
                text = stop if (stop := answers.stop_text(latest, breaker)) else text
            ctx.result = _answer(text, ctx.stream)
            return
        excluded = _excluded(ctx.messages)
        local = _local_tools(ctx.options)
        if ctx.stream:  # the calls are known once the stream is finalized
            ctx.stream_result_hooks.append(lambda response: self._decide(sid, response, local))
        await call_next()
        if _excluded(ctx.messages) > excluded:
            self.core.session(sid).compacted()
        if isinstance(ctx.result, ChatResponse):
            self._decide(sid, ctx.result, local)

    def _decide(self, sid: str, response: Any, local: set[str] | None) -> None:
        """A response with function calls is one batch: decide its calls in its order."""
        calls = [
            (str(c.name), c.parse_arguments(), c.call_id)
            for m in response.messages
            for c in m.contents
            if c.type == "function_call" and c.call_id and (local is None or c.name in local)
        ]
        self.core.decide(sid, calls)

    # -- each function call (function middleware) --------------------------------
    async def function_call(self, ctx: FunctionInvocationContext, call_next: Next) -> None:
        sid = _sid(ctx.session)
        name = ctx.function.name
        args = _plain(ctx.arguments)
        call_id = ctx.metadata.get("call_id")
        # decided now when no model response showed it (a stream, an approval)
        decision = self.core.take(sid, name, args, call_id)
        refused = answers.tool_result(decision)
        if refused is not None:
            ctx.result = refused
            return
        try:
            await call_next()
        except Exception as exc:
            self.core.after(sid, name, args, call_id, error=answers.error_text(exc))
            raise
        value = _result_value(ctx.result)
        decisions = self.core.after(sid, name, args, call_id, result=value)
        if any(answers.note_shown(d) for d in decisions):
            ctx.result = answers.with_notes(answers.result_text(value), decisions)


class _Turns(AgentMiddleware):
    def __init__(self, owner: LoopGuard) -> None:
        self.owner = owner

    async def process(self, context: AgentContext, call_next: Next) -> None:
        await self.owner.run(context, call_next)


class _Responses(ChatMiddleware):
    def __init__(self, owner: LoopGuard) -> None:
        self.owner = owner

    async def process(self, context: ChatContext, call_next: Next) -> None:
        await self.owner.model_call(context, call_next)


class _Calls(FunctionMiddleware):
    def __init__(self, owner: LoopGuard) -> None:
        self.owner = owner

    async def process(self, context: FunctionInvocationContext, call_next: Next) -> None:
        await self.owner.function_call(context, call_next)


def loopguard_middleware(guard: Guard | None = None, **options: Any) -> list[Any]:
    """The `middleware=` list of a new LoopGuard (keep one per process: its state is per
    session)."""
    return LoopGuard(guard, **options).middleware


def _sid(session: Any) -> str:
    sid = getattr(session, "session_id", None)
    return str(sid) if sid else "default"


def _plain(args: Any) -> Any:
    dump = getattr(args, "model_dump", None)
    if callable(dump):
        return dump()
    return dict(args) if hasattr(args, "items") else args


def _result_value(result: Any) -> Any:
    """A function result as plain data: its text contents joined, else as given."""
    if isinstance(result, list) and all(isinstance(c, Content) for c in result):
        texts = [c.text for c in result if c.type == "text" and c.text is not None]
        if len(texts) == len(result):
            return "".join(texts)
        return [c.to_dict() for c in result]
    return result


def _excluded(messages: Sequence[Any]) -> int:
    return sum(1 for m in messages if (m.additional_properties or {}).get(EXCLUDED) is True)


def _local_tools(options: Any) -> set[str] | None:
    tools = (options or {}).get("tools") if hasattr(options, "get") else None
    if not tools:
        return None
    names = {getattr(t, "name", None) for t in tools if hasattr(t, "invoke")}
    return {n for n in names if n} or None


def _latest_text(messages: Sequence[Any]) -> str | None:
    """The newest non-empty model text since the last user message."""
    for message in reversed(messages):
        if message.role == "user":
            return None
        if message.role == "assistant" and message.text.strip():
            return str(message.text)
    return None


def _answer(text: str, stream: bool) -> Any:
    """A model response carrying only `text` (a stream of one update when streaming)."""
    if not stream:
        return ChatResponse(messages=Message(role="assistant", contents=[text]))

    async def one() -> Any:
        yield ChatResponseUpdate(role="assistant", contents=[Content.from_text(text)])

    return ResponseStream(one(), finalizer=ChatResponse.from_updates)


def openai_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Agent Framework messages as OpenAI-shaped dicts (user and assistant text)."""
    return [
        {"role": m.role, "content": m.text}
        for m in messages
        if m.role in ("user", "assistant", "system") and m.text
    ]
