"""Reader of tau-bench results files (`results/<agent>-<model>-....json`).

A JSON array of runs, `{"task_id", "trial", "reward", "info", "traj"}`
(JSONL with one run per line is read too); each run is a session named
`task<task_id>-trial<trial>`. `traj` is the conversation in OpenAI Chat
shape, read as `openai-chat` reads it (the tool-calling agent: `tool_calls`
answered by `role: tool` messages, one batch per message). The ReAct and
Act agents write their actions as text instead: an assistant message whose
content ends in `Action:` followed by `{"name", "arguments"}` JSON is one
call (`respond` is the reply to the user, not a call), and the next user
message, `API output: ...`, is its result. A run with an empty `traj` (the
run failed before the first message) is reported as a warning.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from loopguard.findings import Finding
from loopguard.replay.transcripts.events import (
    Context,
    Stream,
    ToolCall,
    Transcript,
    transcript_text,
)
from loopguard.replay.transcripts.jsonstream import stream_document
from loopguard.replay.transcripts.openai_chat import ChatTranslator
from loopguard.replay.transcripts.source import json_lines, not_found, warning
from loopguard.text import jsontext

NAME = "tau-bench"
LABEL = "tau-bench results"
MARKERS = r'"traj"\s*:\s*\[|"task_id"\s*:[^,]*,\s*"reward"\s*:'
_API_OUTPUT = "API output: "


def read(transcript: Transcript) -> Stream:
    """Events of every run in a results file, one session per run."""
    source = transcript.source
    found = False
    if transcript.layout == "jsonl":
        items: Iterator[Any] = (
            item if isinstance(item, Finding) else ("item", None, *item)
            for item in json_lines(source)
        )
    else:
        items = stream_document(source, ())
    for item in items:
        if isinstance(item, Finding):
            yield item
            continue
        kind, _key, line, run = item
        if kind != "item" or not isinstance(run, dict) or not isinstance(run.get("traj"), list):
            yield warning(
                source.name, line, "not a tau-bench run (no `traj` list); skipped", "bad-message"
            )
            continue
        found = True
        yield from _run(
            run, Context(_name(run, f"{source.default_session}:{line}"), source.name, line)
        )
    if not found:
        raise not_found(
            source.name,
            "tau-bench runs",
            'a results file is a JSON array of {"task_id", "trial", "traj": [...]} runs',
        )


def _name(run: dict[str, Any], default: str) -> str:
    task, trial = run.get("task_id"), run.get("trial")
    if task is None:
        return default
    return f"task{task}" + (f"-trial{trial}" if trial is not None else "")


def _run(run: dict[str, Any], ctx: Context) -> Stream:
    if not run["traj"]:
        error = run.get("info", {}).get("error") if isinstance(run.get("info"), dict) else None
        yield ctx.warning(
            f"run {ctx.session} has no messages" + (f" ({error})" if error else ""),
            "empty-run",
        )
    chat = ChatTranslator()
    pending: str | None = None
    start = ctx.line
    for index, message in enumerate(run["traj"]):
        ctx.line = start
        if not isinstance(message, dict):
            yield ctx.warning(f"traj message #{index + 1} is not an object; skipped", "bad-message")
            continue
        text = transcript_text(message.get("content"))
        role = message.get("role")
        if pending is not None and role == "user" and text.startswith(_API_OUTPUT):
            yield ctx.result(pending, text[len(_API_OUTPUT) :])
            pending = None
            continue
        action = (
            _react_action(text) if role == "assistant" and not message.get("tool_calls") else None
        )
        if action is not None:
            pending = f"action@{index + 1}"
            yield ctx.reply(text, (ToolCall(pending, action[0], action[1]),))
            continue
        yield from chat.message(message, ctx)
    yield ctx.end()


def _react_action(text: str) -> tuple[str, Any] | None:
    """(name, arguments) of a ReAct `Action:` that is a tool call (not `respond`)."""
    if "Action:" not in text:
        return None
    try:
        action = jsontext.loads(text.rsplit("Action:", 1)[1].strip())
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(action, dict)
        or not isinstance(action.get("name"), str)
        or action["name"] == "respond"
    ):
        return None
    return action["name"], action.get("arguments") or {}
