"""Gemini CLI's hooks: their own event names, a top-level `decision`, results in `llmContent`.

- `BeforeTool` denies with `{"decision": "deny", "reason": ...}` (the model gets the reason
  as the tool's error); `continue: false` ends the agent loop at once.
- Tool events carry no call id: a call's pre and post events pair by tool and arguments.
- `AfterTool` carries `tool_response` with `llmContent` and, for a tool-level failure,
  `error`. A shell command that exits non-zero has no `error`: its `llmContent` ends with
  `Exit Code: N`, read here as a failure. The `Process Group PGID: N` line (a new number on
  every run) and the `<untrusted_context>` wrapper are dropped, so a repeated command's
  output compares equal.
- `BeforeToolSelection` fires before every model request: it closes the round, so the calls
  between two of them are one response's batch.
- `PreCompress` fires before every model request too (trigger `auto`), whether or not it
  compresses; only a manual `/compress` is taken as a compaction.
- `AfterAgent` with `decision: "deny"` sends the model back with the reason as its prompt.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from loopguard.hooks import event as ev
from loopguard.hooks.dialects.base import Dialect, Install, claude_style, session_key, text

EVENTS = {
    "BeforeAgent": ev.PROMPT,
    "BeforeToolSelection": ev.BATCH_END,
    "BeforeTool": ev.PRE,
    "AfterTool": ev.POST,
    "AfterAgent": ev.STOP,
    "PreCompress": ev.COMPACT,
    "SessionStart": ev.SESSION_START,
    "SessionEnd": ev.SESSION_END,
}
TOOL_EVENTS = ("BeforeTool", "AfterTool")
_EXIT_CODE = re.compile(r"^Exit Code: (-?\d+)\s*$", re.MULTILINE)
_PGID = re.compile(r"^Process Group PGID: \d+\s*$\n?", re.MULTILINE)
_WRAPPER = re.compile(r"^\s*<untrusted_context>\n?|\n?</untrusted_context>\s*$")


def parse_gemini(payload: Mapping[str, Any], name: str) -> ev.HookEvent:
    kind = EVENTS[name]
    if name == "PreCompress" and payload.get("trigger") != "manual":
        kind = ev.IGNORED
    event = ev.HookEvent(
        kind,
        name,
        session_key(payload, ("session_id",)),
        tool=text(payload, "tool_name") or "",
        args=payload.get("tool_input"),
        prompt=text(payload, "prompt") or "",
        cwd=text(payload, "cwd"),
    )
    if kind == ev.POST:
        _read_response(event, payload.get("tool_response"))
    elif kind == ev.STOP:
        event.text = text(payload, "prompt_response")
    return event


def _read_response(event: ev.HookEvent, response: Any) -> None:
    """The call's result, or its error (a tool error, or a shell's non-zero exit code)."""
    if not isinstance(response, Mapping):
        event.result = response
        return
    error = response.get("error")
    if error:
        event.kind = ev.FAILURE
        message = error.get("message") if isinstance(error, Mapping) else error
        event.error = str(message or "error")
        return
    content = response.get("llmContent", response)
    if isinstance(content, str):
        content = _WRAPPER.sub("", _PGID.sub("", content))
        code = _EXIT_CODE.search(content)
        if code and code.group(1) != "0":
            event.kind = ev.FAILURE
            event.error = content
            return
    event.result = content


def render_gemini(event: ev.HookEvent, answer: ev.Answer) -> ev.Rendered:
    return ev.Rendered(claude_style(event, answer, deny_decision=True))


DIALECT = Dialect(
    name="gemini",
    title="Gemini CLI",
    events=EVENTS,
    parse=parse_gemini,
    render=render_gemini,
    batches=True,
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
