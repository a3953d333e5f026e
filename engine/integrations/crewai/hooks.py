"""`LoopGuard`: loopguard as CrewAI's global LLM and tool-call hooks.

`LoopGuard().register()` adds four process-wide hooks (`crewai.hooks`), so every crew and
agent created afterwards is guarded without changing it; `unregister()` removes them.

- `before_llm_call`: the first model call of an agent executor (one task) starts a turn
  (`begin_turn` with the executor's messages and tools). Later calls put the guard's answer
  in place of CrewAI's fixed "Tool execution blocked by hook" observation of a refused
  call, add a pending required-tool retry prompt, and note a shrunk message list (CrewAI's
  summary on a context overflow) as `compacted()`.
- `after_llm_call`: a response naming a tool (CrewAI's ReAct text has one call per
  response, so every round is one call) is decided here; a breaker replaces the response
  with `Final Answer: <the guard's stop text>`, which ends the task, unless a required-tool
  retry applies. A final answer goes to `finish_round`: a retry asks the model again from
  inside the hook (the answer and the retry prompt join the executor's messages), an
  exhausted retry's warning is put in front of the answer.
- `before_tool_call`: a blocked or aborted call returns False, so the tool never runs.
- `after_tool_call`: `after_call` with the result; a shown note is appended to it. CrewAI
  turns a tool's exception into an "I encountered an error" result: that is recorded as
  the call's error.

The session is the crew's id and the agent's id (`"<crew id>/<agent id>"`; an agent run
without a crew: its id), so a coworker a task delegates to has a turn of its own.
"""

from __future__ import annotations

import itertools
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any

with warnings.catch_warnings():  # crewai 1.6's crewai.rag warns while it is imported
    warnings.simplefilter("ignore", ImportWarning)
    from crewai.agents.parser import AgentAction, AgentFinish, parse
    from crewai.hooks import (
        register_after_llm_call_hook,
        register_after_tool_call_hook,
        register_before_llm_call_hook,
        register_before_tool_call_hook,
        unregister_after_llm_call_hook,
        unregister_after_tool_call_hook,
        unregister_before_llm_call_hook,
        unregister_before_tool_call_hook,
    )
    from crewai.utilities.i18n import I18N

from loopguard.decision import Decision
from loopguard.integrations._core import GuardCore, _bound, json_args
from loopguard.session import answers
from loopguard.session.guard import Guard

BLOCKED = "Tool execution blocked by hook."  # how CrewAI answers a call a hook refused
FINAL = "Final Answer:"


@dataclass
class _Turn:
    """One session's task in progress: its executor and the call between the hooks."""

    executor: Any = None
    pending: tuple[str, str, Any, Decision] | None = None  # decided after the model call
    open: list[tuple[str, str, Any]] = field(default_factory=list)  # calls running
    refused: tuple[str, str] | None = None  # (tool, the guard's answer) of a refused call
    retry: str | None = None  # a required-tool retry prompt for the next model call
    size: int = 0  # the executor's message count at its last model call


class LoopGuard:
    """Keeps CrewAI crews and agents out of tool-call loops (see the module docstring)."""

    def __init__(
        self, guard: Guard | None = None, *, agent: str | None = None, run_id: str | None = None
    ) -> None:
        self.core = GuardCore(guard, agent, run_id)
        self._lock = threading.Lock()
        self._turns: dict[str, _Turn] = {}
        self._ids = itertools.count(1)
        errors = I18N().errors("tool_usage_exception")
        self._error_prefix = errors.split("{error}")[0]

    # -- registration ----------------------------------------------------------
    def register(self) -> LoopGuard:
        """Add the four hooks to CrewAI's global registries (once); returns self."""
        self.unregister()
        register_before_llm_call_hook(self.before_llm_call)
        register_after_llm_call_hook(self.after_llm_call)
        register_before_tool_call_hook(self.before_tool_call)
        register_after_tool_call_hook(self.after_tool_call)
        return self

    def unregister(self) -> None:
        """Remove the hooks (executors already created keep their LLM hooks)."""
        unregister_before_llm_call_hook(self.before_llm_call)
        unregister_after_llm_call_hook(self.after_llm_call)
        unregister_before_tool_call_hook(self.before_tool_call)
        unregister_after_tool_call_hook(self.after_tool_call)

    # -- LLM hooks -------------------------------------------------------------
    def before_llm_call(self, ctx: Any) -> None:
        sid = _sid(ctx.crew, ctx.agent)
        messages = ctx.messages
        with self._lock:
            turn = self._turns.get(sid)
            starting = turn is None or turn.executor is not ctx.executor
            if starting:
                turn = self._turns[sid] = _Turn(executor=ctx.executor)
                _bound(self._turns)
            assert turn is not None
            refused, turn.refused = turn.refused, None
            retry, turn.retry = turn.retry, None
            shrunk = len(messages) < turn.size
        if starting:
            tools = [t.name for t in getattr(ctx.executor, "tools", None) or []]
            self.core.begin_turn(sid, [_plain_message(m) for m in messages], tools or None)
        if refused is not None:
            _replace_observation(messages, refused)
        if shrunk:
            self.core.session(sid).compacted()
        if retry is not None:
            messages.append({"role": "user", "content": retry})
        with self._lock:
            turn.size = len(messages)

    def after_llm_call(self, ctx: Any) -> str | None:
        response = ctx.response
        if not isinstance(response, str):
            return None  # a native tool-call response: decided when each call starts
        sid = _sid(ctx.crew, ctx.agent)
        original = response
        for _ in range(64):  # each pass is a retry the rules allow; they end well before this
            try:
                step = parse(response)
            except Exception:  # CrewAI answers a malformed response itself
                break
            if isinstance(step, AgentAction):
                return self._decide(sid, step, response, original)
            if not isinstance(step, AgentFinish):
                break
            outcome = self.core.finish(sid, step.output)
            if outcome.action == "retry":
                ctx.messages.append({"role": "assistant", "content": response})
                ctx.messages.append({"role": "user", "content": outcome.message or ""})
                response = ctx.llm.call(
                    ctx.messages,
                    callbacks=getattr(ctx.executor, "callbacks", None),
                    from_task=ctx.task,
                    from_agent=ctx.agent,
                )
                if not isinstance(response, str):
                    return None
                continue
            if (outcome.text or "") != step.output:
                return _final_answer(outcome.text or "")
            break
        return None if response is original else response

    def _decide(self, sid: str, step: Any, response: str, original: str) -> str | None:
        """Decide the response's call now; a breaker ends the task unless a retry applies."""
        name, args = str(step.tool).strip(), json_args(step.tool_input)  # as CrewAI's tool gets it
        call_id = f"crewai-{next(self._ids)}"
        self.core.begin_round(sid)
        decision = self.core.before(sid, name, args, call_id)
        turn = self._turn(sid)
        with self._lock:
            turn.pending = (call_id, name, args, decision)
        if decision.action == "breaker" and self.core.closed(sid):
            ending = self.core.ending(sid, None)
            if ending.retry is None:
                with self._lock:
                    turn.pending = None
                return _final_answer(ending.text)
            with self._lock:
                turn.retry = ending.retry
        return None if response is original else response

    # -- tool hooks ------------------------------------------------------------
    def before_tool_call(self, ctx: Any) -> bool | None:
        sid = _sid(ctx.crew, ctx.agent)
        name = str(ctx.tool_name)
        args = dict(ctx.tool_input or {})
        turn = self._turn(sid)
        with self._lock:
            pending, turn.pending = turn.pending, None
        if pending is not None and _same_tool(pending[1], name):
            call_id, _, args, decision = pending
        else:  # a call no after_llm_call decided (an agent run without LLM hooks)
            call_id = f"crewai-{next(self._ids)}"
            self.core.begin_round(sid)
            decision = self.core.before(sid, name, args, call_id)
        refused = answers.tool_result(decision)
        with self._lock:
            if refused is not None:
                turn.refused = (name, refused)
                return False
            turn.open.append((call_id, name, args))
        return None

    def after_tool_call(self, ctx: Any) -> str | None:
        sid = _sid(ctx.crew, ctx.agent)
        name = str(ctx.tool_name)
        result = ctx.tool_result if isinstance(ctx.tool_result, str) else str(ctx.tool_result)
        turn = self._turn(sid)
        with self._lock:
            if turn.refused is not None and result.startswith(BLOCKED):
                refused, turn.refused = turn.refused, None
                return refused[1]  # CrewAI versions that run after-hooks on refused calls
            index = next(
                (i for i in range(len(turn.open) - 1, -1, -1) if _same_tool(turn.open[i][1], name)),
                None,
            )
            call_id, _, args = (
                turn.open.pop(index) if index is not None else (None, name, ctx.tool_input)
            )
        error = self._error_of(result)
        if error is not None:
            self.core.after(sid, name, args, call_id, error=error)
            return None
        decisions = self.core.after(sid, name, args, call_id, result=result)
        if not any(answers.note_shown(d) for d in decisions):
            return None
        return answers.with_notes(result, decisions)

    # -- internals ---------------------------------------------------------------
    def _turn(self, sid: str) -> _Turn:
        with self._lock:
            turn = self._turns.get(sid)
            if turn is None:
                turn = self._turns[sid] = _Turn()
                _bound(self._turns)
            return turn

    def _error_of(self, result: str) -> str | None:
        """The error of CrewAI's "I encountered an error ..." result, else None."""
        text = result.lstrip()
        if not self._error_prefix or not text.startswith(self._error_prefix):
            return None
        return text[len(self._error_prefix) :].split("\n", 1)[0].rstrip(".") or "error"


def _sid(crew: Any, agent: Any) -> str:
    agent_id = str(getattr(agent, "id", "") or "agent")
    crew_id = getattr(crew, "id", None)
    return agent_id if crew_id is None else f"{crew_id}/{agent_id}"


def _same_tool(a: str, b: str) -> bool:
    return a.casefold().strip() == b.casefold().strip()


def _plain_message(message: Any) -> dict[str, Any]:
    if isinstance(message, dict):
        return {"role": message.get("role", "user"), "content": message.get("content", "")}
    return {"role": "user", "content": str(message)}


def _replace_observation(messages: list[Any], refused: tuple[str, str]) -> None:
    """Put the guard's answer where the last message says CrewAI blocked the call."""
    tool, text = refused
    blocked = f"{BLOCKED} Tool: {tool}"
    for message in reversed(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str) and blocked in content:
            head, _, tail = content.rpartition(blocked)
            message["content"] = head + text + tail
            return


def _final_answer(text: str) -> str:
    """A response CrewAI reads as the task's final answer."""
    return f"{FINAL} {text}"
