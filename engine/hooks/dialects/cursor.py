"""Cursor's native hooks (`.cursor/hooks.json`); Cursor also runs Claude Code's hooks.

Payloads carry `hook_event_name`, `conversation_id` (the session), `generation_id`,
`workspace_roots`; `preToolUse` / `postToolUse` / `postToolUseFailure` fire for every tool
with `tool_name`, `tool_input`, and after a call `tool_output` or an error. A deny is
`{"permission": "deny", "agent_message": ..., "user_message": ...}`; `postToolUse` can add
`additional_context`; `stop` can send the agent on with `followup_message`. Cursor has no
documented way for a tool hook to end the turn: after a breaker every further call of the
turn is denied instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopguard.hooks import event as ev
from loopguard.hooks.dialects.base import Dialect, Install, session_key, text

EVENTS = {
    "beforeSubmitPrompt": ev.PROMPT,
    "preToolUse": ev.PRE,
    "postToolUse": ev.POST,
    "postToolUseFailure": ev.FAILURE,
    "stop": ev.STOP,
    "preCompact": ev.COMPACT,
    "sessionStart": ev.SESSION_START,
    "sessionEnd": ev.SESSION_END,
}


def parse_cursor(payload: Mapping[str, Any], name: str) -> ev.HookEvent:
    kind = EVENTS[name]
    roots = payload.get("workspace_roots")
    root = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else None
    event = ev.HookEvent(
        kind,
        name,
        session_key(payload, ("conversation_id", "session_id")),
        tool=text(payload, "tool_name") or "",
        args=payload.get("tool_input"),
        call_id=text(payload, "tool_use_id", "tool_call_id"),
        prompt=text(payload, "prompt") or "",
        cwd=text(payload, "cwd") or root,
    )
    if kind == ev.POST:
        for key in ("tool_output", "tool_response", "output", "result_json"):
            if key in payload:
                event.result = payload[key]
                break
    elif kind == ev.FAILURE:
        event.error = text(payload, "error_message", "error") or "error"
    return event


def render_cursor(event: ev.HookEvent, answer: ev.Answer) -> ev.Rendered:
    out: dict[str, Any] = {}
    if answer.deny is not None:
        out["permission"] = "deny"
        out["agent_message"] = answer.deny
        out["user_message"] = answer.end_turn or "loopguard blocked a repeated tool call"
    elif answer.context:
        out["additional_context"] = answer.context
    if answer.retry is not None:
        out["followup_message"] = answer.retry
    if answer.user and "user_message" not in out:
        out["user_message"] = answer.user
    return ev.Rendered(out)


DIALECT = Dialect(
    name="cursor",
    title="Cursor",
    events=EVENTS,
    parse=parse_cursor,
    render=render_cursor,
    ends_turn=False,
    install=Install(
        project=".cursor/hooks.json",
        user=".cursor/hooks.json",
        events=tuple((name, None) for name in EVENTS),
        layout="flat",
        file_extra={"version": 1},
    ),
)
