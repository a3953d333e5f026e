"""`LoopGuardPlugin`: loopguard as a Google ADK plugin, so every agent of an App is guarded.

- `on_user_message_callback`: `begin_turn` with the session's earlier text and the new
  message (a message carrying function responses, e.g. a confirmation, is no new turn).
- `after_model_callback`: a response with function calls is one batch, decided here in
  the model's order (ADK runs a response's calls as concurrent tasks); a call the model
  sent without an id gets ADK's client id now, so its tool call finds the decision. A
  response without calls goes to `finish_round`: a retry keeps the model's text and adds
  a call to the plugin's own `loopguard_retry` tool, whose result is the retry prompt
  (ADK's ReflectAndRetryModelPlugin re-prompts the same way); an exhausted retry's
  warning replaces the text.
- `before_tool_callback`: a blocked or aborted call does not run; the guard's tool result
  (as a dict) is its response.
- `after_tool_callback`: `after_call`; a shown note goes into the response (`{"result":
  text + note}`, or a `loopguard` key next to the fields of a dict result).
- `on_tool_error_callback`: a tool that raised is recorded (`after_call(error=…)`); the
  error then goes on to the next plugin, or fails the run (ADK's default).
- `before_model_callback`: once a breaker closed the tools the model is not called again:
  the turn ends with the final answer, or asks for the required tool (`loopguard_retry`).
  A compaction event new to the plugin (an App's `events_compaction_config`) calls
  `compacted()`.

The session is ADK's session id; `run_id` stays unset unless given.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from google.adk.flows.llm_flows.functions import generate_client_function_call_id
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.adk.utils.content_utils import SKIP_THOUGHT_SIGNATURE_VALIDATOR
from google.genai import types

from loopguard.decision import Decision
from loopguard.integrations._core import GuardCore, Options, _bound
from loopguard.session import answers
from loopguard.session.guard import Guard

if TYPE_CHECKING:
    from typing_extensions import Unpack

RETRY_TOOL = "loopguard_retry"  # the plugin's own tool: its result is a required-tool retry prompt
NOTE_KEY = "loopguard"  # the key a note takes in a dict result


class LoopGuardPlugin(BasePlugin):
    """Keeps every agent of an ADK App out of tool-call loops (see the module docstring)."""

    def __init__(
        self, guard: Guard | None = None, *, name: str = "loopguard", **options: Unpack[Options]
    ) -> None:
        super().__init__(name=name)
        self.core = GuardCore(guard, **options)
        self._lock = threading.Lock()
        self._answered: dict[tuple[str, str], bool] = {}  # refused or failed: no after_call
        self._retry: dict[str, str] = {}  # session -> the prompt loopguard_retry returns
        self._retry_tool = FunctionTool(func=self.loopguard_retry)

    # -- turns and model calls -------------------------------------------------
    async def on_user_message_callback(
        self, *, invocation_context: Any, user_message: Any
    ) -> types.Content | None:
        if any(p.function_response for p in user_message.parts or ()):
            return None
        session = invocation_context.session
        messages = openai_messages(session.events)
        messages.append({"role": "user", "content": _text(user_message)})
        self.core.begin_turn(str(session.id), messages)
        return None

    async def before_model_callback(
        self, *, callback_context: Any, llm_request: Any
    ) -> LlmResponse | None:
        llm_request.tools_dict[RETRY_TOOL] = self._retry_tool  # runnable, never offered
        sid = _sid(callback_context)
        events = callback_context.session.events
        self._note_compaction(sid, events)
        if not self.core.closed(sid):
            return None
        ending = self.core.ending(sid, _latest_text(events))
        if ending.retry is not None:
            return self._retry_response(sid, ending.retry, ())
        final = types.Content(role="model", parts=[types.Part(text=ending.text)])
        return LlmResponse(content=final)

    async def after_model_callback(
        self, *, callback_context: Any, llm_response: Any
    ) -> LlmResponse | None:
        content = llm_response.content
        if llm_response.partial or content is None or llm_response.error_code:
            return None
        sid = _sid(callback_context)
        calls = llm_response.get_function_calls()
        if calls:  # one batch, decided now in the model's order
            mine = [c for c in calls if c.name != RETRY_TOOL]
            for call in mine:
                if not call.id:  # what ADK would give it a moment later
                    call.id = generate_client_function_call_id()
            self.core.decide(sid, [(str(c.name), dict(c.args or {}), c.id) for c in mine])
            return None
        text = _text(content)
        outcome = self.core.finish(sid, text)
        if outcome.action == "retry":
            return self._retry_response(sid, outcome.message or "", content.parts or ())
        if (outcome.text or "") == text:
            return None
        others = [p for p in content.parts or () if not (p.text and not p.thought)]
        parts = [*others, types.Part(text=outcome.text or "")]
        return llm_response.model_copy(update={"content": types.Content(role="model", parts=parts)})

    async def loopguard_retry(self, tool_context: ToolContext) -> dict[str, str]:
        """Tells the model which tool the user's request still needs (loopguard's retry)."""
        with self._lock:
            prompt = self._retry.pop(_sid(tool_context), "")
        return {"status": "retry", "message": prompt}

    # -- tool calls --------------------------------------------------------------
    async def before_tool_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any
    ) -> dict[str, Any] | None:
        if tool.name == RETRY_TOOL:
            return None
        key = (_sid(tool_context), str(tool_context.function_call_id))
        decision = self.core.take(key[0], tool.name, tool_args, key[1])
        refused = answers.tool_result(decision)
        if refused is None:
            return None
        self._mark_answered(key)
        answer: dict[str, Any] = json.loads(refused)
        return answer

    async def after_tool_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any, result: Any
    ) -> dict[str, Any] | None:
        if tool.name == RETRY_TOOL:
            return None
        key = (_sid(tool_context), str(tool_context.function_call_id))
        with self._lock:
            if self._answered.pop(key, False):  # refused here, or recorded as a failure
                return None
        decisions = self.core.after(key[0], tool.name, tool_args, key[1], result=result)
        if not any(answers.note_shown(d) for d in decisions):
            return None
        return with_note(result, decisions)

    async def on_tool_error_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any, error: BaseException
    ) -> dict[str, Any] | None:
        if tool.name == RETRY_TOOL or not isinstance(error, Exception):  # e.g. CancelledError
            return None
        key = (_sid(tool_context), str(tool_context.function_call_id))
        self.core.after(key[0], tool.name, tool_args, key[1], error=answers.error_text(error))
        self._mark_answered(key)  # another plugin may still answer it: after_tool then skips
        return None

    # -- internals ---------------------------------------------------------------
    def _retry_response(self, sid: str, prompt: str, parts: Sequence[Any]) -> LlmResponse:
        """The model's text (if any) plus a call to `loopguard_retry`, which answers `prompt`."""
        with self._lock:
            self._retry[sid] = prompt
            _bound(self._retry)
        call = types.Part(
            function_call=types.FunctionCall(
                id=generate_client_function_call_id(), name=RETRY_TOOL, args={}
            ),
            thought_signature=SKIP_THOUGHT_SIGNATURE_VALIDATOR,  # not the model's own call
        )
        kept = [p for p in parts if p.function_call is None]
        return LlmResponse(content=types.Content(role="model", parts=[*kept, call]))

    def _mark_answered(self, key: tuple[str, str]) -> None:
        with self._lock:
            self._answered[key] = True
            _bound(self._answered)

    def _note_compaction(self, sid: str, events: Sequence[Any]) -> None:
        """A compaction event the plugin has not seen means the context was compacted."""
        newest = next(
            (e.id for e in reversed(events) if e.actions is not None and e.actions.compaction),
            None,
        )
        if newest is not None:
            self.core.compaction(sid, newest)


def with_note(result: Any, decisions: Sequence[Decision]) -> dict[str, Any]:
    """A tool response with the guard's notes: appended to a plain result's text, or under
    the `loopguard` key of a dict result (ADK wraps a plain result as `{"result": value}`)."""
    if isinstance(result, dict) and set(result) != {"result"}:
        return {**result, NOTE_KEY: answers.with_notes("", decisions).strip()}
    value = result["result"] if isinstance(result, dict) else result
    return {"result": answers.with_notes(answers.result_text(value), decisions)}


def _sid(context: Any) -> str:
    return str(context.session.id)


def _text(content: Any) -> str:
    """The visible text of a Content (thoughts left out)."""
    if content is None:
        return ""
    return "".join(p.text for p in content.parts or () if p.text and not p.thought)


def _latest_text(events: Sequence[Any]) -> str | None:
    """The newest non-empty agent text since the last user message."""
    for event in reversed(events):
        text = _text(event.content)
        if event.author == "user" and text:
            return None
        if event.author != "user" and text.strip():
            return text
    return None


def openai_messages(events: Sequence[Any]) -> list[dict[str, Any]]:
    """A session's events as OpenAI-shaped dicts (user and agent text), for `begin_turn`."""
    out: list[dict[str, Any]] = []
    for event in events:
        text = _text(event.content)
        if text:
            role = "user" if event.author == "user" else "assistant"
            out.append({"role": role, "content": text})
    return out
