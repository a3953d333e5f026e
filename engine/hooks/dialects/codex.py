"""OpenAI Codex CLI's hooks: Claude Code's wire format with small differences.

Inputs add `turn_id` (the user turn) and `model`; `session_id` is the thread id; shell
commands arrive as `Bash` with `{"command": ...}`. There is no batch-end event and no
failure event: a failed command arrives as `PostToolUse` with its output as a string (no
exit code). A deny is Claude's `hookSpecificOutput.permissionDecision`. Codex refuses a
pre-tool answer that carries `continue` or `stopReason` (and then runs the call), and on a
post-tool answer they replace the tool's output without ending the turn: a tool hook cannot
end a Codex turn, so after a breaker every further call of the turn is denied.
"""

from __future__ import annotations

from loopguard.hooks import event as ev
from loopguard.hooks.dialects.base import Dialect, Install, claude_style
from loopguard.hooks.dialects.claude import parse_claude

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


def render_codex(event: ev.HookEvent, answer: ev.Answer) -> ev.Rendered:
    out = claude_style(event, answer)
    out.pop("continue", None)
    out.pop("stopReason", None)
    return ev.Rendered(out)


DIALECT = Dialect(
    name="codex",
    title="Codex CLI",
    events=EVENTS,
    parse=parse_claude,
    render=render_codex,
    ends_turn=False,
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
