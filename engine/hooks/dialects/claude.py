"""Claude Code's hooks (also what VS Code agent mode and Cursor load from .claude/settings.json).

Payloads carry `session_id`, `hook_event_name`, `cwd`, and per event `prompt`, `tool_name`,
`tool_input`, `tool_use_id`, `tool_response` (PostToolUse), `error` (PostToolUseFailure),
`last_assistant_message` (Stop), `agent_id` and `agent_type` inside a sub-agent (a
compaction fires `SubagentStop` with an empty `agent_type`: ignored). A deny's
`permissionDecisionReason` reaches the model as the call's result; `continue: false` ends the
turn; `PostToolBatch` closes the calls of one response.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopguard.hooks import event as ev
from loopguard.hooks.dialects.base import Dialect, Install, claude_style, session_key, text

EVENTS = {
    "UserPromptSubmit": ev.PROMPT,
    "PreToolUse": ev.PRE,
    "PostToolUse": ev.POST,
    "PostToolUseFailure": ev.FAILURE,
    "PostToolBatch": ev.BATCH_END,
    "Stop": ev.STOP,
    "SubagentStop": ev.STOP,
    "PreCompact": ev.COMPACT,
    "SessionStart": ev.SESSION_START,
    "SessionEnd": ev.SESSION_END,
}
TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")


def parse_claude(payload: Mapping[str, Any], name: str) -> ev.HookEvent:
    """A Claude Code hook input (Codex's and Copilot's snake_case inputs share the fields)."""
    kind = EVENTS.get(name, ev.IGNORED)
    if name == "SubagentStop" and not payload.get("agent_type"):
        kind = ev.IGNORED  # a compaction's summarising agent, not a sub-agent of the session
    event = ev.HookEvent(
        kind,
        name,
        session_key(payload, ("session_id",), ("agent_id",)),
        tool=text(payload, "tool_name") or "",
        args=payload.get("tool_input"),
        call_id=text(payload, "tool_use_id"),
        prompt=text(payload, "prompt") or "",
        cwd=text(payload, "cwd"),
    )
    if kind == ev.POST:
        event.result = payload.get("tool_response")
    elif kind == ev.FAILURE:
        event.error = text(payload, "error") or "error"
    elif kind == ev.STOP:
        event.text = text(payload, "last_assistant_message")
    return event


def render_claude(event: ev.HookEvent, answer: ev.Answer) -> ev.Rendered:
    return ev.Rendered(claude_style(event, answer))


DIALECT = Dialect(
    name="claude",
    title="Claude Code",
    events=EVENTS,
    parse=parse_claude,
    render=render_claude,
    batches=True,
    install=Install(
        project=".claude/settings.json",
        user=".claude/settings.json",
        events=tuple((name, "*" if name in TOOL_EVENTS else None) for name in EVENTS),
        layout="nested",
        timeout=("timeout", 30),
        entry_extra={"type": "command"},
    ),
)
