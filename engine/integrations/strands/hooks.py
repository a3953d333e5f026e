"""`LoopGuardHooks`: loopguard as a Strands Agents hook provider.

- `BeforeInvocationEvent`: `begin_turn` with the conversation and the new user text, and
  the agent's tool names as the offered tools (input without user text, such as interrupt
  responses, or the plugin's own retry prompt, continues the turn).
- `BeforeToolsEvent`: a model message's tool uses are one batch, decided here in the
  model's order (the default executor runs them as concurrent tasks).
- `BeforeToolCallEvent`: a blocked or aborted call is cancelled (`cancel_tool`) with the
  guard's tool result as the message, which the model gets as an error tool result.
- `AfterToolCallEvent`: `after_call` with the result, or with the error when the tool
  raised (Strands turns the exception into an error result, which the model sees); a
  shown note is appended to the result's content.
- `AfterToolsEvent`: once a breaker closed the tools, the turn ends without another model
  call (`end_turn` with the final answer); when a required-tool retry applies instead, the
  retry prompt joins the tool-results message and the model goes on with tools.
- `AfterModelCallEvent`: a message without tool uses goes to `finish_round`; an exhausted
  retry's warning is written into it. `AfterInvocationEvent`: a required-tool retry
  re-invokes the agent with the retry prompt (`resume`).
- Messages the conversation manager removed since the last look (`removed_message_count`
  grew; looked at before and after each invocation and before each model call) call
  `compacted()`.

The session is the agent's `session_id` (the session manager's id, else the random id
Strands gives each agent); `run_id` stays unset unless given.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from strands.hooks import (
    AfterInvocationEvent,
    AfterModelCallEvent,
    AfterToolCallEvent,
    AfterToolsEvent,
    BeforeInvocationEvent,
    BeforeModelCallEvent,
    BeforeToolCallEvent,
    BeforeToolsEvent,
    HookProvider,
    HookRegistry,
)

from loopguard.integrations._core import GuardCore, Options, _bound
from loopguard.session import answers
from loopguard.session.guard import Guard

if TYPE_CHECKING:
    from typing_extensions import Unpack


class LoopGuardHooks(HookProvider):
    """Keeps a Strands agent out of tool-call loops (see the module docstring)."""

    def __init__(self, guard: Guard | None = None, **options: Unpack[Options]) -> None:
        self.core = GuardCore(guard, **options)
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], bool] = {}  # calls decided (or running)
        self._retry: dict[str, str] = {}  # session -> the prompt to resume with
        self._resuming: dict[str, bool] = {}  # session -> the next invocation is our retry
        self._removed: dict[str, int] = {}  # session -> removed_message_count last seen

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeInvocationEvent, self.before_invocation)
        registry.add_callback(BeforeModelCallEvent, self.before_model_call)
        registry.add_callback(AfterModelCallEvent, self.after_model_call)
        registry.add_callback(BeforeToolsEvent, self.before_tools)
        registry.add_callback(BeforeToolCallEvent, self.before_tool_call)
        registry.add_callback(AfterToolCallEvent, self.after_tool_call)
        registry.add_callback(AfterToolsEvent, self.after_tools)
        registry.add_callback(AfterInvocationEvent, self.after_invocation)

    # -- turns -------------------------------------------------------------------
    def before_invocation(self, event: BeforeInvocationEvent) -> None:
        agent = event.agent
        sid = _sid(agent)
        self._note_compaction(sid, agent)
        with self._lock:
            resuming = self._resuming.pop(sid, False)
        new = openai_messages(event.messages or [])
        if resuming or not any(m["role"] == "user" for m in new):
            return
        self.core.begin_turn(sid, [*openai_messages(agent.messages), *new], agent.tool_names)

    def before_model_call(self, event: BeforeModelCallEvent) -> None:
        self._note_compaction(_sid(event.agent), event.agent)

    def after_model_call(self, event: AfterModelCallEvent) -> None:
        stop = event.stop_response
        if stop is None or stop.stop_reason in ("tool_use", "cancelled", "interrupt"):
            return
        message = stop.message
        if any("toolUse" in block for block in message["content"]):
            return
        sid = _sid(event.agent)
        text = _text(message)
        outcome = self.core.finish(sid, text)
        if outcome.action == "retry":
            with self._lock:
                self._retry[sid] = outcome.message or ""
                _bound(self._retry)
        elif (outcome.text or "") != text:  # in place: this message is the one history keeps
            others = [b for b in message["content"] if "text" not in b]
            message["content"][:] = [*others, {"text": outcome.text or ""}]

    def after_invocation(self, event: AfterInvocationEvent) -> None:
        sid = _sid(event.agent)
        self._note_compaction(sid, event.agent)  # the manager trims right before this event
        with self._lock:
            retry = self._retry.pop(sid, None)
            if retry is not None and event.result is not None:
                self._resuming[sid] = True
                _bound(self._resuming)
        if retry is not None and event.result is not None:
            event.resume = retry

    # -- tool calls --------------------------------------------------------------
    def before_tools(self, event: BeforeToolsEvent) -> None:
        sid = _sid(event.agent)
        uses = [b["toolUse"] for b in event.message["content"] if "toolUse" in b]
        with self._lock:  # a batch split by an interrupt comes back: decide new calls only
            uses = [u for u in uses if (sid, str(u["toolUseId"])) not in self._seen]
            for use in uses:
                self._seen[(sid, str(use["toolUseId"]))] = True
                _bound(self._seen)
        self.core.decide(sid, [(u["name"], u.get("input"), str(u["toolUseId"])) for u in uses])

    def before_tool_call(self, event: BeforeToolCallEvent) -> None:
        if event.cancel_tool:  # another hook already cancelled it
            return
        sid, use = _sid(event.agent), event.tool_use
        call_id = str(use["toolUseId"])
        with self._lock:
            self._seen[(sid, call_id)] = True
            _bound(self._seen)
        decision = self.core.take(sid, use["name"], use.get("input"), call_id)
        refused = answers.tool_result(decision)
        if refused is not None:
            event.cancel_tool = refused

    def after_tool_call(self, event: AfterToolCallEvent) -> None:
        if event.cancel_message is not None:  # cancelled (by the guard or a hook): never ran
            return
        sid, use, result = _sid(event.agent), event.tool_use, event.result
        content = result.get("content") or []
        if event.exception is not None:
            outcome: dict[str, Any] = {"error": answers.error_text(event.exception)}
        elif result.get("status") == "error":
            outcome = {"error": _text({"content": content}) or "error"}
        else:
            outcome = {"result": _value(content)}
        decisions = self.core.after(
            sid, use["name"], use.get("input"), str(use["toolUseId"]), **outcome
        )
        notes = answers.with_notes("", decisions).strip()
        if notes:
            event.result = {**result, "content": [*content, {"text": notes}]}

    def after_tools(self, event: AfterToolsEvent) -> None:
        agent = event.agent
        sid = _sid(agent)
        if not self.core.closed(sid):
            return
        ending = self.core.ending(sid, _latest_text(agent.messages))
        if ending.retry is not None:  # the model goes on, with tools, asked for the tool
            event.message["content"].append({"text": ending.retry})
            return
        event.end_turn = ending.text or True

    # -- internals ---------------------------------------------------------------
    def _note_compaction(self, sid: str, agent: Any) -> None:
        """The conversation manager removed messages since the last look: `compacted()`."""
        removed = getattr(agent.conversation_manager, "removed_message_count", 0)
        if not isinstance(removed, int):
            return
        with self._lock:
            grew = removed > self._removed.get(sid, 0)
            self._removed[sid] = removed
            _bound(self._removed)
        if grew:
            self.core.session(sid).compacted()


def _sid(agent: Any) -> str:
    return str(agent.session_id)


def _text(message: Any) -> str:
    return "".join(
        b["text"] for b in message.get("content") or () if isinstance(b.get("text"), str)
    )


def _value(content: Sequence[Any]) -> Any:
    """A tool result's content as the guard records it: its text, else the blocks."""
    if all(isinstance(b, dict) and set(b) == {"text"} for b in content):
        return "".join(b["text"] for b in content)
    return list(content)


def _latest_text(messages: Sequence[Any]) -> str | None:
    """The newest non-empty assistant text since the last user text."""
    for message in reversed(messages):
        text = _text(message)
        if message.get("role") == "user" and text:
            return None
        if message.get("role") == "assistant" and text.strip():
            return text
    return None


def openai_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Strands messages as OpenAI-shaped dicts (user and assistant text), for `begin_turn`."""
    out: list[dict[str, Any]] = []
    for message in messages:
        text = _text(message)
        if text and message.get("role") in ("user", "assistant"):
            out.append({"role": message["role"], "content": text})
    return out
