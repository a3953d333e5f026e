"""Gemini CLI's hooks: their own event names, a top-level `decision`, results in `llmContent`.

`BeforeTool` denies with `{"decision": "deny", "reason": ...}` (the reason reaches the model
as the tool's error); `continue: false` ends the agent loop; `AfterTool` carries
`tool_response` with `llmContent` and, when the tool failed, `error`; `AfterAgent` with
`decision: "deny"` sends the model back with the reason as its prompt. No batch-end event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopguard.hooks import event as ev
from loopguard.hooks.dialects.base import Dialect, Install, session_key, text

EVENTS = {
    "BeforeAgent": ev.PROMPT,
    "BeforeTool": ev.PRE,
    "AfterTool": ev.POST,
    "AfterAgent": ev.STOP,
    "PreCompress": ev.COMPACT,
    "SessionStart": ev.SESSION_START,
    "SessionEnd": ev.SESSION_END,
}
TOOL_EVENTS = ("BeforeTool", "AfterTool")


def parse_gemini(payload: Mapping[str, Any], name: str) -> ev.HookEvent:
    kind = EVENTS[name]
    event = ev.HookEvent(
        kind,
        name,
        session_key(payload, ("session_id",)),
        tool=text(payload, "tool_name") or "",
        args=payload.get("tool_input"),
        call_id=text(payload, "tool_call_id", "call_id"),
        prompt=text(payload, "prompt") or "",
        cwd=text(payload, "cwd"),
    )
    if kind == ev.POST:
        response = payload.get("tool_response")
        if isinstance(response, Mapping):
            error = response.get("error")
            if error:
                event.kind = ev.FAILURE
                message = error.get("message") if isinstance(error, Mapping) else error
                event.error = str(message or "error")
            else:
                event.result = response.get("llmContent", response)
        else:
            event.result = response
    elif kind == ev.STOP:
        event.text = text(payload, "prompt_response")
    return event


def render_gemini(event: ev.HookEvent, answer: ev.Answer) -> ev.Rendered:
    out: dict[str, Any] = {}
    if answer.deny is not None:
        out["decision"] = "deny"
        out["reason"] = answer.deny
    elif answer.context:
        out["hookSpecificOutput"] = {
            "hookEventName": event.name,
            "additionalContext": answer.context,
        }
    if answer.retry is not None:
        out["decision"] = "deny"
        out["reason"] = answer.retry
    if answer.end_turn is not None:
        out["continue"] = False
        out["stopReason"] = answer.end_turn
    if answer.user:
        out["systemMessage"] = answer.user
    return ev.Rendered(out)


DIALECT = Dialect(
    name="gemini",
    title="Gemini CLI",
    events=EVENTS,
    parse=parse_gemini,
    render=render_gemini,
    install=Install(
        project=".gemini/settings.json",
        user=".gemini/settings.json",
        events=tuple((name, ".*" if name in TOOL_EVENTS else None) for name in EVENTS),
        layout="nested",
        timeout=("timeout", 30000),  # milliseconds
        entry_extra={"type": "command", "name": "loopguard"},
        comments=True,  # settings.json is read through strip-json-comments
        builtin_loop_switch=("model", "disableLoopDetection"),
        note="Gemini CLI runs a project's hooks only in a trusted folder.",
    ),
)
