"""Reader of SWE-agent trajectories (`<instance>.traj`, also gzipped).

One JSON object per run (read whole: a trajectory is one run):

- `history`: the messages the model saw (`role`, `content`, `agent`,
  `is_demo`, and in function-calling runs `tool_calls` on assistant messages
  and `tool_call_ids` on `role: tool` observations). When any assistant
  message carries `tool_calls`, the history is the transcript: read as
  OpenAI Chat reads it (`tool_calls[].function.{name, arguments}`, one
  batch per message; the result matched by the first of `tool_call_ids`).
- otherwise the agent wrote text actions, and `trajectory` is the
  transcript: each step `{response, thought, action, observation}` is one
  model response with one `bash` call `{"command": action}` (trailing
  whitespace trimmed) answered by its `observation`. Steps with a blank
  action (the model's reply had no command) and SWE-agent's own
  `exit_cost`, `exit_context`, ... steps (the harness ending the run) are not
  calls and are skipped. The history messages
  before the first assistant message supply the system prompt and the task
  (the first user message; demonstrations, `is_demo`, are system context).

The file is one session, named after the file.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from loopguard.replay.transcripts.events import (
    Context,
    Stream,
    ToolCall,
    Transcript,
    transcript_text,
)
from loopguard.replay.transcripts.jsonstream import stream_document
from loopguard.replay.transcripts.source import not_found

NAME = "swe-agent"
LABEL = "SWE-agent trajectory"
MARKERS = (
    r'"trajectory"\s*:\s*\[|"agent"\s*:\s*"(?:primary|main)"'
    r'|"message_type"\s*:\s*"(?:system_prompt|observation|action|thought)"'
)

_HARNESS_EXIT = re.compile(r"exit_[a-z_]+")


def read(transcript: Transcript) -> Stream:
    """Events of one SWE-agent run."""
    source = transcript.source
    history: list[tuple[int, Any]] = []
    steps: list[tuple[int, Any]] = []
    for kind, key, line, value in stream_document(source, ("history", "trajectory")):
        if kind == "item" and key == "history":
            history.append((line, value))
        elif kind == "item" and key == "trajectory":
            steps.append((line, value))
    if not history and not steps:
        raise not_found(
            source.name,
            "SWE-agent `history` or `trajectory`",
            "a .traj file is an object with `trajectory` steps and `history` messages",
        )
    ctx = Context(source.default_session, source.name, 1)
    if any(
        isinstance(m, dict) and m.get("role") == "assistant" and m.get("tool_calls")
        for _, m in history
    ):
        yield from _function_calling(history, ctx)
    else:
        yield from _prefix(history, ctx)
        yield from _text_actions(steps, ctx)
    yield ctx.end()


def bash_call(call_id: str, command: str) -> ToolCall:
    """A text action as a call: `bash` with `{"command": ...}` (mini-swe-agent's too)."""
    return ToolCall(call_id, "bash", {"command": command})


def _listish(value: Any) -> Any:
    """Some versions wrote lists as their Python repr; read those back safely."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
    return value


def _message(obj: dict[str, Any], ctx: Context, seen_user: bool) -> Stream:
    role, text = obj.get("role"), transcript_text(obj.get("content"))
    if role == "system" or role == "user" and (obj.get("is_demo") or seen_user):
        yield ctx.system(text)
    elif role == "user":
        yield ctx.user(text)


def _prefix(history: list[tuple[int, Any]], ctx: Context) -> Stream:
    """System prompt, demonstrations and the task: the history before the first action."""
    seen_user = False
    for ctx.line, obj in history:
        if not isinstance(obj, dict) or obj.get("role") == "assistant":
            return
        yield from _message(obj, ctx, seen_user)
        seen_user = seen_user or obj.get("role") == "user" and not obj.get("is_demo")


def _text_actions(steps: list[tuple[int, Any]], ctx: Context) -> Stream:
    for number, (ctx.line, step) in enumerate(steps, 1):
        if not isinstance(step, dict) or not isinstance(step.get("action"), str):
            yield ctx.warning(
                f"trajectory step {number} has no `action` text; skipped", "bad-message"
            )
            continue
        command = step["action"].rstrip()
        if not command.strip() or _HARNESS_EXIT.fullmatch(command.strip()):
            continue
        call = bash_call(f"step{number}", command)
        text = (
            step.get("response") if isinstance(step.get("response"), str) else step.get("thought")
        )
        yield ctx.reply(text if isinstance(text, str) else "", (call,))
        yield ctx.result(call.id, step.get("observation"), name="bash")


def _function_calling(history: list[tuple[int, Any]], ctx: Context) -> Stream:
    seen_user = False
    for ctx.line, obj in history:
        if not isinstance(obj, dict):
            yield ctx.warning("history entry is not an object; skipped", "bad-message")
            continue
        role = obj.get("role")
        if role == "assistant":
            raw = _listish(obj.get("tool_calls"))
            text = transcript_text(obj.get("content"))
            yield from ctx.reply_calling(text, raw if isinstance(raw, list) else [], True)
        elif role == "tool":
            ids = _listish(obj.get("tool_call_ids"))
            call_id = ids[0] if isinstance(ids, list) and ids else obj.get("tool_call_id")
            yield ctx.result(str(call_id or ""), transcript_text(obj.get("content")))
        else:
            yield from _message(obj, ctx, False if role == "system" else seen_user)
            seen_user = seen_user or role == "user" and not obj.get("is_demo")
