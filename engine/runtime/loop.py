"""A complete agent turn: drive a model and its tools with every loopguard decision applied.

`run_turn(model, tools, messages, session)` and `await arun_turn(...)` share one step
generator (`_steps`), so the sync and async twins behave identically; they differ only in
how they call the model and the tools. The runtime uses only the public Session API
(begin_turn, begin_round, before_call, after_call, finish_round, compacted, report, turn,
config).

- `model(messages, tools_enabled=True)` returns an assistant message in OpenAI shape
  (a bare string is read as its content). An exception from the model propagates.
- `tools` maps names to callables taking the parsed argument dict; its names are what the
  agent offers, so a required tool missing from it is no requirement (`begin_turn(tools=…)`).
  An exception becomes an error result the model sees and a failure in the session's
  history. Arguments that are not valid JSON (or not an object) are never passed to the
  tool: the model gets an error result.
- A breaker answers every call of its round, closes the tools and ends the turn with the
  model's text so far (or, when it wrote none, the breaker's message), unless a required-tool
  retry applies: that asks for one more round, with tools offered. So the model
  is always called with `tools_enabled=True`; the parameter is part of the contract for hosts
  that build their own loop on the Session API.
- A turn a breaker ended reports `stopped=True` and finishes with detail "breaker" (the
  breaker itself is the decision event before it).
- The round cap (`turn.max_tool_rounds`) ends the turn with a breaker decision of detector
  `max_tool_rounds`, reported through `session.report` like every other decision (decision
  log, `loopguard_on_decision` listeners) and recorded as the turn's `stop` event.
- `on_round(round, messages)` (optional) runs before every model call from round 2 on; if it
  returns a list, that list becomes the model's context from then on (a compacted history)
  and the runtime calls `session.compacted()`.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopguard.decision import Decision, Vote
from loopguard.rules import default
from loopguard.session import answers
from loopguard.text.content import content_text, strip_recall
from loopguard.text.jsontext import check_depth
from loopguard.text.messages import render

Message = dict[str, Any]
Model = Callable[..., Any | Awaitable[Any]]
Tools = Mapping[str, Callable[..., Any]]
OnRound = Callable[[int, list[Message]], list[Message] | None]


@dataclass(frozen=True)
class TurnEvent:
    """One thing that happened in a turn: a decision, a retry, a stop or the finish."""

    kind: str  # "decision" | "retry" | "stop" | "finish"
    round: int
    decision: Decision | None = None
    detail: str = ""  # finish: "ok", "breaker" or "exhausted"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "round": self.round,
            "detail": self.detail,
            "decision": self.decision.to_dict() if self.decision else None,
        }


@dataclass(frozen=True)
class TurnResult:
    """The final text, the turn's new messages (OpenAI shape) and its ordered events."""

    text: str
    messages: list[Message]
    events: list[TurnEvent] = field(default_factory=list)
    model_calls: int = 0
    # the turn was cut short: a breaker ended it (finish detail "breaker") or the round
    # cap stopped it (the stop event)
    stopped: bool = False


@dataclass(frozen=True)
class _AskModel:
    messages: list[Message]


@dataclass(frozen=True)
class _RunTool:
    tool: Callable[..., Any]
    args: dict[str, Any]


def _language_text(messages: Sequence[Any], config: Mapping[str, Any]) -> str:
    recall = (config.get("turn") or {}).get("recall") or {}
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == "user":
            text = strip_recall(
                content_text(message),
                recall.get("keep_tag", default("turn.recall.keep_tag")),
                recall.get("drop_tag", default("turn.recall.drop_tag")),
            )
            if text.strip():
                return text
    return ""


def _parse_args(raw: Any) -> tuple[Any, str | None]:
    """(arguments, error): a dict on success, else the raw value and why it was refused."""
    if isinstance(raw, Mapping):
        return dict(raw), None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    try:
        parsed = check_depth(json.loads(raw), len(raw)) if isinstance(raw, str) else raw
    except json.JSONDecodeError as exc:
        return raw, f"invalid JSON arguments: {exc}"
    except ValueError as exc:  # an integer longer than the interpreter converts
        return raw, f"unusable arguments: {exc}"
    except RecursionError:  # nested deeper than `MAX_DEPTH`, or than the JSON parser goes
        return raw, "unusable arguments: nested too deeply"
    if not isinstance(parsed, dict):
        return raw, "tool arguments must be a JSON object"
    return parsed, None


def _as_message(reply: Any) -> Mapping[str, Any]:
    """A model reply as a mapping: a dict, or an OpenAI SDK `ChatCompletion` / message object.

    Anything else raises TypeError naming what came back: a reply the runtime cannot read
    must not become a silent empty answer.
    """
    if reply is None:
        return {"content": None}
    if isinstance(reply, Mapping):
        return reply
    choices = getattr(reply, "choices", None)
    if isinstance(choices, Sequence) and not isinstance(choices, str) and choices:
        reply = getattr(choices[0], "message", choices[0])
    dump = getattr(reply, "model_dump", None)
    if callable(dump):
        dumped = dump(exclude_none=True)
        if isinstance(dumped, Mapping):
            return dumped
    raise TypeError(
        f"the model returned {type(reply).__name__}: expected a str, an assistant "
        "message dict in OpenAI Chat Completions shape, or an OpenAI SDK "
        "ChatCompletion / ChatCompletionMessage"
    )


def _assistant(reply: Any, rnd: int) -> Message:
    """The model's reply as an assistant message; tool calls copied, each with an id."""
    if isinstance(reply, str):
        return {"role": "assistant", "content": reply}
    message = dict(_as_message(reply), role="assistant")
    message.setdefault("content", None)
    calls = message.pop("tool_calls", None)
    if isinstance(calls, list) and calls:
        message["tool_calls"] = [
            dict(call, id=str(call.get("id") or f"call_{rnd}_{i}"))
            if isinstance(call, Mapping)
            else {"id": f"call_{rnd}_{i}", "type": "function", "function": {}}
            for i, call in enumerate(calls)
        ]
    return message


def _steps(
    tools: Tools,
    messages: Sequence[Message],
    session: Any,
    run_id: str | None,
    on_round: OnRound | None,
) -> Generator[Any, Any, TurnResult]:
    """The turn as a generator: yields _AskModel/_RunTool requests, returns the TurnResult."""
    config = session.config
    cap = int((config.get("turn") or {}).get("max_tool_rounds", default("turn.max_tool_rounds")))
    lang_text = _language_text(messages, config)
    session.begin_turn(list(messages), tools=list(tools) if isinstance(tools, Mapping) else None)
    context: list[Message] = list(messages)
    new: list[Message] = []
    skipped: list[int] = []  # ids of retry messages and the rounds they replaced
    events: list[TurnEvent] = []

    def add(message: Message) -> None:
        new.append(message)
        context.append(message)

    for rnd in range(1, cap + 1):
        if rnd > 1 and on_round is not None:
            replacement = on_round(rnd, list(context))
            if replacement is not None:
                context = list(replacement)
                session.compacted()
        reply = yield _AskModel(list(context))
        assistant = _assistant(reply, rnd)
        round_start = len(new)
        add(assistant)
        calls = assistant.get("tool_calls", [])
        stopped_by: Decision | None = None  # the breaker that cut this round short
        if calls:
            session.begin_round()  # the calls of one response are one batch
            for call in calls:
                fn = call.get("function")
                fn = fn if isinstance(fn, Mapping) else {}
                name = str(fn.get("name") or "")
                content, decisions = yield from _one_call(
                    tools, session, name, fn.get("arguments"), call["id"], run_id
                )
                add({"role": "tool", "tool_call_id": call["id"], "content": content})
                if stopped_by is not None:  # the breaker closed this batch: the call was aborted
                    continue
                events.extend(TurnEvent("decision", rnd, d, _describe(d, name)) for d in decisions)
                stopped_by = next((d for d in decisions if d.action == "breaker"), None)
            if stopped_by is None:
                continue
        round_text = assistant.get("content")
        if stopped_by is not None:
            # a breaker closes the tools and ends the turn with the model's text so
            # far, unless a required-tool retry applies (which asks for one more call).
            round_text = _latest_text(new, skipped) or None
        outcome = session.finish_round(round_text)
        if outcome.action == "retry":
            events.append(TurnEvent("retry", rnd, None, f"{outcome.problem}: {outcome.message}"))
            retry = {"role": "user", "content": outcome.message}
            add(retry)
            skipped += [id(m) for m in new[round_start:]]  # the answer and the retry
            continue
        final = outcome.text or ""
        if stopped_by is not None:
            if round_text is None:  # the model wrote nothing: the answer says why it stopped
                final = answers.stop_text(final, stopped_by)
            if final != (assistant.get("content") or ""):
                new.append({"role": "assistant", "content": final})
        elif final != (assistant.get("content") or ""):
            where = next(i for i, m in enumerate(new) if m is assistant)
            new[where] = dict(assistant, content=final)
        kept = [m for m in new if id(m) not in skipped]
        detail = "exhausted" if outcome.exhausted else "breaker" if stopped_by else "ok"
        events.append(TurnEvent("finish", rnd, None, detail))
        return TurnResult(final, kept, events, rnd, stopped=stopped_by is not None)
    text = render(config, "round_cap", lang_text, rounds=cap)
    vote = Vote("max_tool_rounds", "breaker", cap, "max_tool_rounds", text, code="round_cap")
    stop = session.report(
        Decision(
            "breaker", (vote,), text, turn=session.turn, run_id=run_id, detector="max_tool_rounds"
        )
    )
    events.append(TurnEvent("stop", cap, stop, text))
    new.append({"role": "assistant", "content": text})
    return TurnResult(text, new, events, cap, stopped=True)


def _latest_text(new: list[Message], skipped: list[int]) -> str:
    """The newest non-empty assistant text of this turn (not counting replaced answers)."""
    for message in reversed(new):
        text = message.get("content") if message.get("role") == "assistant" else None
        if isinstance(text, str) and text.strip() and id(message) not in skipped:
            return text
    return ""


def _one_call(
    tools: Tools,
    session: Any,
    name: str,
    raw: Any,
    call_id: str,
    run_id: str | None,
) -> Generator[Any, Any, tuple[str, list[Decision]]]:
    """One tool call through the guard: (content for the model, the decisions made)."""
    args, problem = _parse_args(raw)
    decision = session.before_call(name, args, call_id=call_id, run_id=run_id)
    refused = answers.tool_result(decision)
    if refused is not None:
        return refused, [decision]
    result: Any = None
    error = problem
    if error is None and name not in tools:
        error = f"unknown tool: {name}" if name else "tool call without a function name"
    if error is None:
        ok, result = yield _RunTool(tools[name], args)
        if not ok:
            error, result = result, None
    after = session.after_call(
        name, args, result=result, error=error, call_id=call_id, run_id=run_id
    )
    content = answers.error_result(error) if error is not None else answers.result_text(result)
    content = answers.with_notes(content, (decision, after))
    decisions = [decision] + ([after] if after.action != "allow" else [])
    return content, decisions


def _describe(decision: Decision, name: str) -> str:
    detail = f"{decision.action} {name}"
    if decision.detector:
        detail += f" [{decision.detector}]"
    return detail + (" after the call" if decision.phase == "after" else "")


def run_turn(
    model: Model,
    tools: Tools,
    messages: Sequence[Message],
    session: Any,
    *,
    run_id: str | None = None,
    on_round: OnRound | None = None,
) -> TurnResult:
    """Run one user turn to its end (see the module docstring)."""
    steps = _steps(tools, messages, session, run_id, on_round)
    answer: Any = None
    while True:
        finished, request = _advance(steps, answer)
        if finished:
            return request  # type: ignore[no-any-return]
        if isinstance(request, _AskModel):
            answer = model(request.messages, tools_enabled=True)
            if inspect.isawaitable(answer):
                _discard(answer)
                raise TypeError("the model returned an awaitable: use arun_turn for async models")
            continue
        try:
            answer = (True, request.tool(request.args))
        except Exception as exc:  # noqa: BLE001 — a failing tool is reported to the model
            answer = (False, answers.error_text(exc))
        if inspect.isawaitable(answer[1]):
            _discard(answer[1])
            answer = (False, "async tool called from run_turn: use arun_turn")


async def arun_turn(
    model: Model,
    tools: Tools,
    messages: Sequence[Message],
    session: Any,
    *,
    run_id: str | None = None,
    on_round: OnRound | None = None,
) -> TurnResult:
    """The async twin of run_turn; model and tools may be sync or async callables.

    A session whose store does network or disk I/O (`blocking_io`, e.g. RedisStore) is
    driven from a worker thread, so the event loop never waits for the store.
    """
    steps = _steps(tools, messages, session, run_id, on_round)
    offload = bool(getattr(session, "blocking_io", False))
    answer: Any = None
    while True:
        if offload:
            finished, request = await asyncio.to_thread(_advance, steps, answer)
        else:
            finished, request = _advance(steps, answer)
        if finished:
            return request  # type: ignore[no-any-return]
        if isinstance(request, _AskModel):
            answer = model(request.messages, tools_enabled=True)
            if inspect.isawaitable(answer):
                answer = await answer
            continue
        try:
            value = request.tool(request.args)
            if inspect.isawaitable(value):
                value = await value
            answer = (True, value)
        except Exception as exc:  # noqa: BLE001 — a failing tool is reported to the model
            answer = (False, answers.error_text(exc))


def _advance(steps: Generator[Any, Any, TurnResult], answer: Any) -> tuple[bool, Any]:
    """One step of the turn: (False, the next request) or (True, the TurnResult)."""
    try:
        return False, steps.send(answer)
    except StopIteration as done:
        return True, done.value


def _discard(awaitable: Any) -> None:
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()
