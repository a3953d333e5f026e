"""`LoopGuard`: loopguard around an OpenAI Agents SDK run.

`LoopGuard.run` / `run_sync` wrap `Runner.run` / `Runner.run_sync`:

- before the run: `begin_turn` with the input; the session id goes into a context
  variable, because tools are shared objects that cannot carry one;
- the agent runs as a clone whose function tools carry a `ToolInputGuardrail`
  (`before_call`: a blocked or aborted call is rejected with the guard's tool result)
  and a `ToolOutputGuardrail` (`after_call`; a shown note is appended to the output), and
  whose `tool_use_behavior` ends the run with the final answer once a breaker closed the
  tools (only the default `run_llm_again` is replaced; another behaviour is kept);
- `RunHooks.on_llm_end` makes each model response one batch and decides its calls in the
  model's order (the SDK runs them as concurrent tasks); your own `hooks` still run;
- `RunConfig.tool_error_formatter` records a tool that raised as a failure (`after_call`
  with the error; the model gets the SDK's error message, or your formatter's);
- a compaction-aware SDK session (`run_compaction`, e.g. OpenAIResponsesCompactionSession)
  is watched: a compaction that shrank the stored history calls `compacted()`;
- after the run: `finish_round` with the final output. Nothing inside a run can re-prompt
  after a final answer, so a required-tool retry is a new run with the retry prompt
  appended (through the SDK session, the conversation id or the returned input list).

The session is `session_id`, else the SDK session's id, else the `conversation_id`, else
"default"; `run_id` stays unset unless given (to separate concurrent sub-agents).
"""

from __future__ import annotations

import contextvars
import dataclasses
import threading
from collections.abc import Generator
from contextlib import closing
from typing import TYPE_CHECKING, Any

from agents import Agent, RunConfig, RunHooks, Runner
from agents.agent import ToolsToFinalOutputResult
from agents.tool import FunctionTool
from agents.tool_guardrails import (
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolOutputGuardrail,
)

from loopguard.integrations._core import GuardCore, Options, _bound, json_args
from loopguard.session import answers
from loopguard.session.guard import Guard

if TYPE_CHECKING:
    from typing_extensions import Unpack

_SESSION: contextvars.ContextVar[str] = contextvars.ContextVar(
    "loopguard_session", default="default"
)


@dataclasses.dataclass
class _Run:
    """One `Runner` run of a turn, and (set by the caller) its RunResult."""

    agent: Agent[Any]
    input: Any
    options: dict[str, Any]
    result: Any = None


class LoopGuard:
    """Keeps OpenAI Agents SDK runs out of tool-call loops (see the module docstring)."""

    def __init__(self, guard: Guard | None = None, **options: Unpack[Options]) -> None:
        self.core = GuardCore(guard, **options)
        self.input_guardrail: ToolInputGuardrail[Any] = ToolInputGuardrail(self._check, "loopguard")
        self.output_guardrail: ToolOutputGuardrail[Any] = ToolOutputGuardrail(
            self._record, "loopguard"
        )
        self._lock = threading.Lock()
        self._failed: dict[tuple[str, str], bool] = {}
        self._retry: dict[str, str] = {}
        self._ended: dict[str, bool] = {}

    # -- the runner wrapper ----------------------------------------------------
    async def run(
        self, agent: Agent[Any], input: Any, *, session_id: str | None = None, **kwargs: Any
    ) -> Any:
        """`Runner.run` with the guard (see the module docstring); returns the RunResult."""
        with closing(self._runs(agent, input, session_id, kwargs)) as runs:
            for run in runs:
                run.result = await Runner.run(run.agent, run.input, **run.options)
        return run.result

    def run_sync(
        self, agent: Agent[Any], input: Any, *, session_id: str | None = None, **kwargs: Any
    ) -> Any:
        """`Runner.run_sync` with the guard."""
        with closing(self._runs(agent, input, session_id, kwargs)) as runs:
            for run in runs:
                run.result = Runner.run_sync(run.agent, run.input, **run.options)
        return run.result

    def _runs(
        self, agent: Agent[Any], input: Any, session_id: str | None, kwargs: dict[str, Any]
    ) -> Generator[_Run, None, None]:
        """The turn's runs: the caller sets each one's `result` before taking the next (a
        required-tool retry). Closed at once when a run raised, so the turn ends in the
        caller's context (where the contextvar token was set)."""
        sid, token = self._enter(input, session_id, kwargs)
        try:
            guarded = self.protect(agent)
            while True:
                run = _Run(guarded, input, self._options(kwargs))
                yield run
                retry = self._after(sid, run.result)
                if retry is None:
                    return
                input = self._next_input(run.result, retry, kwargs)
        finally:
            _SESSION.reset(token)

    def protect(self, agent: Agent[Any]) -> Agent[Any]:
        """A clone of `agent` whose function tools and tool-use behaviour carry the guard."""
        tools = [self._guard_tool(t) if isinstance(t, FunctionTool) else t for t in agent.tools]
        behavior = agent.tool_use_behavior
        if behavior == "run_llm_again":
            behavior = self.tool_use_behavior
        return agent.clone(tools=tools, tool_use_behavior=behavior)

    def tool_use_behavior(self, context: Any, results: list[Any]) -> ToolsToFinalOutputResult:
        """End the run once a breaker closed the tools (or stash a required-tool retry)."""
        sid = _SESSION.get()
        if not self.core.closed(sid):
            return ToolsToFinalOutputResult(is_final_output=False)
        ending = self.core.ending(sid, None)
        if ending.retry is not None:
            with self._lock:
                self._retry[sid] = ending.retry
            return ToolsToFinalOutputResult(is_final_output=True, final_output="")
        with self._lock:
            self._ended[sid] = True
        return ToolsToFinalOutputResult(is_final_output=True, final_output=ending.text)

    # -- guardrails and hooks --------------------------------------------------
    def _check(self, data: Any) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        sid, call_id = _SESSION.get(), str(ctx.tool_call_id)
        decision = self.core.take(sid, ctx.tool_name, json_args(ctx.tool_arguments), call_id)
        refused = answers.tool_result(decision)
        if refused is None:
            return ToolGuardrailFunctionOutput.allow()
        return ToolGuardrailFunctionOutput.reject_content(refused, output_info=decision.to_dict())

    def _record(self, data: Any) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        sid, call_id = _SESSION.get(), str(ctx.tool_call_id)
        with self._lock:
            failed = self._failed.pop((sid, call_id), False)
        if failed:  # already recorded as a failure by the error formatter
            return ToolGuardrailFunctionOutput.allow()
        decisions = self.core.after(
            sid, ctx.tool_name, json_args(ctx.tool_arguments), call_id, result=data.output
        )
        if not any(answers.note_shown(d) for d in decisions):
            return ToolGuardrailFunctionOutput.allow()
        text = answers.with_notes(answers.result_text(data.output), decisions)
        return ToolGuardrailFunctionOutput.reject_content(text)

    def _on_llm_end(self, agent: Any, response: Any) -> None:
        """One model response is one batch: decide its function-tool calls in the model's order
        (handoffs and hosted tools are not tool calls the guard answers)."""
        names = {t.name for t in getattr(agent, "tools", ()) if isinstance(t, FunctionTool)}
        calls = [
            (item.name, json_args(item.arguments), item.call_id)
            for item in response.output
            if getattr(item, "type", None) == "function_call" and item.name in names
        ]
        self.core.decide(_SESSION.get(), calls)

    def _format_error(self, args: Any, user: Any) -> Any:
        """Record a tool that raised; the text the model sees stays the SDK's (or `user`'s)."""
        if args.kind == "tool_exception" and args.error is not None:
            sid, ctx = _SESSION.get(), args.run_context
            self.core.after(
                sid,
                args.tool_name,
                json_args(getattr(ctx, "tool_arguments", None)),
                args.call_id,
                error=answers.error_text(args.error),
            )
            with self._lock:
                self._failed[(sid, str(args.call_id))] = True
                _bound(self._failed)
        return user(args) if user is not None else None

    # -- internals ---------------------------------------------------------------
    def _guard_tool(self, tool: FunctionTool) -> FunctionTool:
        inputs = [g for g in tool.tool_input_guardrails or [] if g is not self.input_guardrail]
        outputs = [g for g in tool.tool_output_guardrails or [] if g is not self.output_guardrail]
        return dataclasses.replace(
            tool,
            tool_input_guardrails=[*inputs, self.input_guardrail],
            tool_output_guardrails=[*outputs, self.output_guardrail],
        )

    def _enter(
        self, input: Any, session_id: str | None, kwargs: dict[str, Any]
    ) -> tuple[str, contextvars.Token[str]]:
        sid = session_id or _session_of(kwargs)
        token = _SESSION.set(sid)
        messages = (
            [{"role": "user", "content": input}] if isinstance(input, str) else list(input or [])
        )
        self.core.begin_turn(sid, messages)
        return sid, token

    def _options(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        options = dict(kwargs)
        session = kwargs.get("session")
        if session is not None and callable(getattr(session, "run_compaction", None)):
            options["session"] = _CompactionWatch(
                session, self.core.session(_SESSION.get()).compacted
            )
        options["hooks"] = _Hooks(self, kwargs.get("hooks"))
        config = kwargs.get("run_config")
        if isinstance(config, dict):
            config = RunConfig(**config)
        config = config or RunConfig()
        user = config.tool_error_formatter
        options["run_config"] = dataclasses.replace(
            config, tool_error_formatter=lambda args: self._format_error(args, user)
        )
        return options

    def _after(self, sid: str, result: Any) -> str | None:
        """The run ended: the retry prompt for another run, or None (final output settled)."""
        with self._lock:
            retry = self._retry.pop(sid, None)
            ended = self._ended.pop(sid, False)
        if retry is not None:
            return retry
        if ended:  # tool_use_behavior ended it after a breaker: finish_round already ran
            return None
        output = result.final_output
        text = output if isinstance(output, str) else None
        outcome = self.core.finish(sid, text)
        if outcome.action == "retry":
            return outcome.message or ""
        if text is not None and outcome.text is not None and outcome.text != text:
            result.final_output = outcome.text
        return None

    @staticmethod
    def _next_input(result: Any, retry: str, kwargs: dict[str, Any]) -> Any:
        message = {"role": "user", "content": retry}
        if kwargs.get("session") is not None or kwargs.get("conversation_id") is not None:
            return [message]
        if kwargs.get("previous_response_id") is not None:
            kwargs["previous_response_id"] = result.last_response_id
            return [message]
        return [*result.to_input_list(), message]


class _CompactionWatch:
    """A compaction-aware SDK session whose `run_compaction` that shrank the history
    calls `compacted()`; everything else is the wrapped session's."""

    def __init__(self, session: Any, compacted: Any) -> None:
        self._session = session
        self._compacted = compacted

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    async def run_compaction(self, *args: Any, **kwargs: Any) -> None:
        before = len(await self._session.get_items())
        await self._session.run_compaction(*args, **kwargs)
        if len(await self._session.get_items()) < before:
            self._compacted()


class _Hooks(RunHooks[Any]):
    """loopguard's `on_llm_end`, then every hook of the caller's RunHooks (if any)."""

    def __init__(self, owner: LoopGuard, user: RunHooks[Any] | None) -> None:
        self._owner = owner
        self._user = user

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        self._owner._on_llm_end(agent, response)
        if self._user is not None:
            await self._user.on_llm_end(context, agent, response)

    def __getattribute__(self, name: str) -> Any:
        if (
            name.startswith("on_")
            and name != "on_llm_end"
            and object.__getattribute__(self, "_user") is not None
        ):
            return getattr(object.__getattribute__(self, "_user"), name)
        return object.__getattribute__(self, name)


def _session_of(kwargs: dict[str, Any]) -> str:
    session = kwargs.get("session")
    if session is not None and getattr(session, "session_id", None):
        return str(session.session_id)
    if kwargs.get("conversation_id"):
        return str(kwargs["conversation_id"])
    return "default"
