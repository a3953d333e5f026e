"""`LoopGuardMiddleware`: loopguard inside LangChain's `create_agent` loop.

- `before_agent`: `begin_turn` with the conversation (OpenAI-shaped) and the offered tools.
- `after_model`: a response with tool calls is one batch; its calls are decided here, in
  the model's order, because the tool node runs parallel calls on threads in any order
  (so "one blocked, the rest aborted" does not depend on scheduling). A response without
  calls goes to `finish_round`: a retry jumps back to the model with the retry prompt.
- `wrap_tool_call` / `awrap_tool_call`: a blocked or aborted call is answered with a
  `ToolMessage(status="error")` and never runs; a result is recorded with `after_call`
  and carries the guard's note when one is shown; a tool that raises is recorded with
  `after_call(error=…)` and the exception re-raised. (`Command(goto=END)` from here would
  not stop the loop, so stopping is left to `before_model`.)
- `before_model`: once a breaker closed the tools, ends the run (`jump_to: end`) with the
  final answer, or re-prompts when a required-tool retry applies. A new summary message
  from `SummarizationMiddleware` calls `compacted()`.

The session is the `thread_id` of the run's config (the constructor's `session_id` when
the run has none); `run_id` stays unset unless given, to separate concurrent sub-agents.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langgraph.config import get_config

from loopguard.integrations._core import GuardCore, Options
from loopguard.session import answers
from loopguard.session.guard import Guard

if TYPE_CHECKING:
    from typing_extensions import Unpack

SUMMARY_SOURCE = "summarization"  # additional_kwargs["lc_source"] of SummarizationMiddleware


class LoopGuardMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """Keeps a `create_agent` agent out of tool-call loops (see the module docstring)."""

    def __init__(
        self, guard: Guard | None = None, *, session_id: str = "default", **options: Unpack[Options]
    ) -> None:
        super().__init__()
        self.core = GuardCore(guard, **options)
        self.session_id = session_id

    # -- sessions ------------------------------------------------------------
    def _sid(self, config: Any = None) -> str:
        if config is None:
            try:
                config = get_config()
            except RuntimeError:  # outside a graph run
                config = {}
        configurable = (config or {}).get("configurable") or {}
        thread = configurable.get("thread_id")
        return self.session_id if thread is None else str(thread)

    # -- hooks -----------------------------------------------------------------
    def before_agent(self, state: AgentState, runtime: Any) -> dict[str, Any] | None:
        messages = convert_to_openai_messages(list(state["messages"]))
        self.core.begin_turn(self._sid(), messages)
        return None

    async def abefore_agent(self, state: AgentState, runtime: Any) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: AgentState, runtime: Any) -> dict[str, Any] | None:
        sid = self._sid()
        messages = state["messages"]
        self._note_summary(sid, messages)
        if not self.core.closed(sid):
            return None
        ending = self.core.ending(sid, _latest_ai_text(messages))
        if ending.retry is not None:
            return {"messages": [HumanMessage(ending.retry)]}
        return {"messages": [AIMessage(ending.text)], "jump_to": "end"}

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: AgentState, runtime: Any) -> dict[str, Any] | None:
        return self.before_model(state, runtime)

    @hook_config(can_jump_to=["model"])
    def after_model(self, state: AgentState, runtime: Any) -> dict[str, Any] | None:
        sid = self._sid()
        last = state["messages"][-1] if state["messages"] else None
        if not isinstance(last, AIMessage):
            return None
        if last.tool_calls:
            self.core.decide(sid, [(c["name"], c["args"], c["id"]) for c in last.tool_calls])
            return None
        text = last.text
        outcome = self.core.finish(sid, text)
        if outcome.action == "retry":
            return {"messages": [HumanMessage(outcome.message or "")], "jump_to": "model"}
        if (outcome.text or "") != text:
            return {"messages": [AIMessage(outcome.text or "", id=last.id)]}
        return None

    @hook_config(can_jump_to=["model"])
    async def aafter_model(self, state: AgentState, runtime: Any) -> dict[str, Any] | None:
        return self.after_model(state, runtime)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        sid, call, refused = self._check(request)
        if refused is not None:
            return refused
        try:
            out = handler(request)
        except Exception as exc:
            self.core.after(
                sid, call["name"], call["args"], call["id"], error=answers.error_text(exc)
            )
            raise
        return self._record(sid, call, out)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        sid, call, refused = self._check(request)
        if refused is not None:
            return refused
        try:
            out = await handler(request)
        except Exception as exc:
            self.core.after(
                sid, call["name"], call["args"], call["id"], error=answers.error_text(exc)
            )
            raise
        return self._record(sid, call, out)

    # -- internals -------------------------------------------------------------
    def _check(self, request: Any) -> tuple[str, Any, ToolMessage | None]:
        """(session, tool call, the answer when the call must not run)."""
        sid = self._sid(getattr(request.runtime, "config", None))
        call = request.tool_call
        decision = self.core.take(sid, call["name"], call["args"], call["id"])
        refused = answers.tool_result(decision)
        if refused is None:
            return sid, call, None
        return (
            sid,
            call,
            ToolMessage(refused, tool_call_id=call["id"], name=call["name"], status="error"),
        )

    def _record(self, sid: str, call: Any, out: Any) -> Any:
        """`after_call` with the tool's message; the guard's note appended when shown."""
        if not isinstance(out, ToolMessage):  # a Command: recorded by its repr
            self.core.after(sid, call["name"], call["args"], call["id"], result=repr(out))
            return out
        error = out.text if out.status == "error" else None
        decisions = self.core.after(
            sid,
            call["name"],
            call["args"],
            call["id"],
            result=None if error is not None else out.content,
            error=error,
        )
        notes = answers.with_notes("", decisions).lstrip("\n")
        if not notes:
            return out
        if isinstance(out.content, str):
            content: Any = answers.with_notes(out.content, decisions)
        else:
            content = [*out.content, {"type": "text", "text": notes}]
        return out.model_copy(update={"content": content})

    def _note_summary(self, sid: str, messages: Sequence[BaseMessage]) -> None:
        """A summary message we have not seen means the context was compacted."""
        for message in messages:
            if (message.additional_kwargs or {}).get("lc_source") == SUMMARY_SOURCE:
                self.core.compaction(sid, message.id or message.text)
                return


def _latest_ai_text(messages: Sequence[BaseMessage]) -> str | None:
    """The newest non-empty model text since the last user message."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return None
        if isinstance(message, AIMessage) and message.text.strip():
            return message.text
    return None
