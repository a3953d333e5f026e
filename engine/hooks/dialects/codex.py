"""OpenAI Codex CLI's hooks: Claude Code's wire format with small differences.

Inputs add `turn_id` and `model`; `session_id` is the thread id. There is no batch-end
event and no failure event: a failed command arrives as `PostToolUse` with its output.
Decisions use Claude's `hookSpecificOutput.permissionDecision` ("deny" with a reason)
and the common `continue` / `stopReason` / `systemMessage` fields.
"""

from __future__ import annotations

from loopguard.hooks import event as ev
from loopguard.hooks.dialects.base import Dialect, Install
from loopguard.hooks.dialects.claude import parse_claude, render_claude

EVENTS = {
    "UserPromptSubmit": ev.PROMPT,
    "PreToolUse": ev.PRE,
    "PostToolUse": ev.POST,
    "Stop": ev.STOP,
    "SubagentStop": ev.STOP,
    "PreCompact": ev.COMPACT,
    "SessionStart": ev.SESSION_START,
}
TOOL_EVENTS = ("PreToolUse", "PostToolUse")

DIALECT = Dialect(
    name="codex",
    title="Codex CLI",
    events=EVENTS,
    parse=parse_claude,
    render=render_claude,
    install=Install(
        project=".codex/hooks.json",
        user=".codex/hooks.json",
        events=tuple((name, ".*" if name in TOOL_EVENTS else None) for name in EVENTS),
        layout="nested",
        timeout=("timeout", 30),  # seconds
        entry_extra={"type": "command"},
        default_scope="user",  # a project's .codex/hooks.json is read only once it is trusted
        user_env="CODEX_HOME",  # $CODEX_HOME/hooks.json when set
        note=(
            "Codex runs a hook only once you trust it: start `codex` and review the hooks with "
            "/hooks. A project's .codex/hooks.json is read only in a trusted project "
            '(trust_level = "trusted" in ~/.codex/config.toml).'
        ),
    ),
)
