"""Reader of mini-swe-agent trajectories (`<instance>.traj.json`).

One JSON object per run, `{"info", "messages", "trajectory_format"}`; the
`messages` are what the model saw:

- `system`, then the first `user` message (the task: the run's one turn);
- `assistant`: one model response. Its calls are, in this order of
  preference: `tool_calls` (v2 tool-calling models, Chat shape), the
  commands in `extra.actions` (v2, `{"command", "tool_call_id"}`), or the
  one ```` ```bash ```` block of the text (v1, `mini-swe-agent-1`: exactly
  one block is an action; none or several is a format error, no call).
  Each command is a `bash` call `{"command": ...}`;
- `tool` (`tool_call_id`): a call's output (v2 tool calling);
- later `user` messages: the environment answering the pending calls (v1
  and v2 text mode: the observation; after `tool_calls`, a tool-call error,
  read as a failed call); with no call pending (a format error) they are
  feedback, not a turn, and are skipped;
- `exit` (v2): the end of the run; its content (the submission) is the
  output of the call that submitted, when one is pending.

The file is one session, named after the file.
"""

from __future__ import annotations

import re
from typing import Any

from loopguard.replay.transcripts.events import (
    Context,
    Stream,
    Transcript,
    transcript_text,
)
from loopguard.replay.transcripts.jsonstream import stream_document
from loopguard.replay.transcripts.source import not_found
from loopguard.replay.transcripts.swe_agent import bash_call

NAME = "mini-swe-agent"
LABEL = "mini-swe-agent trajectory"
MARKERS = (
    r'"mini_version"\s*:|"trajectory_format"\s*:\s*"mini-swe-agent|minisweagent\.'
    r'|"role"\s*:\s*"exit"|COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT'
)
_BASH_BLOCK = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)


class _Run:
    """The calls of the latest response that are still unanswered."""

    def __init__(self) -> None:
        self.pending: list[str] = []
        self.from_tool_calls = False
        self.seen_task = False
        self.found = False


def read(transcript: Transcript) -> Stream:
    """Events of one mini-swe-agent run."""
    source = transcript.source
    ctx = Context(source.default_session, source.name, 1)
    run = _Run()
    for kind, key, ctx.line, value in stream_document(source, ("messages",)):
        if kind != "item" or key != "messages":
            continue
        run.found = True
        if not isinstance(value, dict):
            yield ctx.warning("message is not an object; skipped", "bad-message")
            continue
        yield from _message(value, run, ctx)
    if not run.found:
        raise not_found(
            source.name,
            "mini-swe-agent `messages`",
            'a trajectory is an object like {"messages": [...], "trajectory_format": ...}',
        )
    yield ctx.end()


def _message(obj: dict[str, Any], run: _Run, ctx: Context) -> Stream:
    role, text = obj.get("role"), transcript_text(obj.get("content"))
    if role == "system":
        yield ctx.system(text)
    elif role == "assistant":
        yield from _assistant(obj, text, run, ctx)
    elif role == "tool":
        call_id = str(obj.get("tool_call_id") or "")
        if call_id in run.pending:
            run.pending.remove(call_id)
        yield ctx.result(call_id, text)
    elif role in ("user", "exit"):
        if role == "user" and not run.seen_task:
            run.seen_task = True
            yield ctx.user(text)
        for call_id in run.pending:
            yield ctx.result(call_id, text, role == "user" and run.from_tool_calls)
        run.pending = []
    else:
        yield ctx.warning(
            f"message with unknown role {role!r}; skipped",
            "bad-message",
            hint="mini-swe-agent roles are system, user, assistant, tool and exit",
        )


def _assistant(obj: dict[str, Any], text: str, run: _Run, ctx: Context) -> Stream:
    raw = obj.get("tool_calls")
    extra = obj.get("extra")
    actions = extra.get("actions") if isinstance(extra, dict) else None
    if isinstance(raw, list) and raw:
        calls, notes = ctx.tool_calls(raw, True)
        yield from notes
    elif isinstance(actions, list) and actions:
        calls = []
        for index, action in enumerate(actions):
            command = action.get("command") if isinstance(action, dict) else None
            if not isinstance(command, str):
                yield ctx.warning(f"action #{index + 1} has no command; skipped", "bad-call")
                continue
            calls.append(bash_call(ctx.call_id(action.get("tool_call_id"), index), command))
    else:
        blocks = _BASH_BLOCK.findall(text)
        calls = [bash_call(f"call@{ctx.line}", blocks[0].strip())] if len(blocks) == 1 else []
    run.pending = [call.id for call in calls]
    run.from_tool_calls = isinstance(raw, list) and bool(raw)
    yield ctx.reply(text, tuple(calls))
