"""GitHub Copilot's hooks (Copilot CLI, the cloud agent, VS Code agent mode).

Registered under PascalCase event names, Copilot sends VS Code's snake_case payloads
(`session_id`, `tool_name`, `tool_input`, `tool_result: {result_type, text_result_for_llm}`),
so they read like Claude Code's. A pre-tool deny is `permissionDecision: "deny"` with a
reason shown to the agent (written both at the top level, as Copilot CLI reads it, and in
Claude's `hookSpecificOutput`, as VS Code reads it). Output of post-tool events is ignored,
except that exit code 2 on `PostToolUseFailure` hands stderr to the model. The breaker:
`permissionRequest` (camelCase: its payload names no event, so its command says
`--event permissionRequest`) answers `behavior: deny` with `interrupt: true`, which stops
the agent, once the turn's tools are closed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopguard.hooks import event as ev
from loopguard.hooks.dialects.base import Dialect, Install, claude_style, session_key, text

EVENTS = {
    "UserPromptSubmit": ev.PROMPT,
    "PreToolUse": ev.PRE,
    "permissionRequest": ev.PERMISSION,
    "PostToolUse": ev.POST,
    "PostToolUseFailure": ev.FAILURE,
    "Stop": ev.STOP,
    "SubagentStop": ev.STOP,
    "PreCompact": ev.COMPACT,
    "SessionStart": ev.SESSION_START,
    "SessionEnd": ev.SESSION_END,
}
_RAN = ("success",)  # tool_result.result_type of a call that returned a result


def parse_copilot(payload: Mapping[str, Any], name: str) -> ev.HookEvent:
    kind = EVENTS[name]
    event = ev.HookEvent(
        kind,
        name,
        session_key(payload, ("session_id", "sessionId"), ("agent_id",)),
        tool=text(payload, "tool_name", "toolName") or "",
        args=payload.get("tool_input", payload.get("toolArgs")),
        call_id=text(payload, "tool_use_id"),
        prompt=text(payload, "prompt") or "",
        cwd=text(payload, "cwd"),
    )
    if kind == ev.POST:
        result = payload.get("tool_result")
        if isinstance(result, Mapping):
            kind_of_result = result.get("result_type")
            body = result.get("text_result_for_llm")
            if kind_of_result == "denied":  # a call a hook denied never ran: nothing to record
                event.kind = ev.IGNORED
            elif kind_of_result in _RAN or kind_of_result is None:
                event.result = body
            else:
                event.kind = ev.FAILURE
                event.error = str(body or kind_of_result)
        else:
            event.result = payload.get("tool_response", result)
    elif kind == ev.FAILURE:
        event.error = text(payload, "error") or "error"
    return event


def render_copilot(event: ev.HookEvent, answer: ev.Answer) -> ev.Rendered:
    if event.kind == ev.PERMISSION:
        if not answer.closed:
            return ev.Rendered({})
        message = answer.deny or answer.end_turn or ""
        return ev.Rendered({"behavior": "deny", "message": message, "interrupt": True})
    out = claude_style(event, answer)
    if answer.deny is not None:
        out["permissionDecision"] = "deny"
        out["permissionDecisionReason"] = answer.deny
    if event.kind == ev.FAILURE and answer.context:
        return ev.Rendered(out, 2, answer.context)  # exit 2: stderr is guidance for the model
    return ev.Rendered(out)


DIALECT = Dialect(
    name="copilot",
    title="GitHub Copilot",
    events=EVENTS,
    parse=parse_copilot,
    render=render_copilot,
    ends_turn=False,  # continue: false is VS Code's; Copilot CLI stops on the interrupt
    install=Install(
        project=".github/hooks/loopguard.json",
        user=".copilot/hooks/loopguard.json",
        events=tuple((name, None) for name in EVENTS),
        layout="flat",
        command_keys=("bash", "powershell"),
        timeout=("timeoutSec", 30),
        entry_extra={"type": "command"},
        file_extra={"version": 1},
        named=("permissionRequest",),
    ),
)
