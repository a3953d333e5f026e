"""Reader of OpenHands trajectories (`save_trajectory_path`, evaluation `output.jsonl`).

A trajectory is a list of events, each an action or an observation:
a JSON array of events, an object whose `history` (or `trajectory`) member
holds them, JSONL with one event per line, or JSONL with one evaluation
instance per line (`{"instance_id", "history": [...]}`, one session each).

- action events (`action`, `source`, `args`, `tool_call_metadata`):
  `message` from the user is a user message (one turn), from the agent the
  reply text; `system` is system context; `condensation` (and the older
  `summarize`) is a context compaction; bookkeeping actions (`recall`,
  `change_agent_state`, `null`, `pause`, `resume`, `stop`, `start`) are
  skipped; every other action is a tool call, named by
  `tool_call_metadata.function_name` (else the action type), with the
  arguments the model sent (from `tool_call_metadata.model_response`; else
  `args` without OpenHands' own fields such as `thought`). Actions of one
  `model_response.id` are one model response, so its parallel calls stay
  one batch even with observations written between them.
- observation events (`observation`, `cause` = the action's `id`,
  `content`): the result of that action's call; `error` and
  `user_rejected` observations are failed calls; a `condense` observation is
  a compaction; `agent_state_changed`, `recall` and `null` are skipped.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from loopguard.findings import Finding
from loopguard.replay.transcripts.events import Context, Stream, ToolCall, Transcript
from loopguard.replay.transcripts.jsonstream import stream_document
from loopguard.replay.transcripts.regroup import Regrouper
from loopguard.replay.transcripts.source import json_lines, not_found
from loopguard.text import jsontext

NAME = "openhands"
LABEL = "OpenHands trajectory"
MARKERS = (
    r'"tool_call_metadata"\s*:|"observation"\s*:\s*"(?:run|read|edit|error|browse|run_ipython|think|'
    r'agent_state_changed|recall)"|"source"\s*:\s*"(?:agent|user|environment)"'
)
_NOT_CALLS = frozenset(
    {
        "message",
        "system",
        "recall",
        "change_agent_state",
        "null",
        "pause",
        "resume",
        "stop",
        "start",
        "condensation",
        "condensation_request",
        "summarize",
    }
)
_SKIPPED_OBSERVATIONS = frozenset(
    {"agent_state_changed", "recall", "null", "agent_condensation_observation"}
)
_OWN_ARGS = frozenset(
    {
        "thought",
        "confirmation_state",
        "security_risk",
        "hidden",
        "is_input",
        "blocking",
        "is_confirmed",
        "impl_source",
        "wait_for_response",
        "image_urls",
        "file_urls",
        "include_extra",
        "activated_microagents",
    }
)


class _Trajectory:
    """One session: its regrouped responses and the call made by each action event."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.group = Regrouper()
        self.calls: OrderedDict[Any, str] = OrderedDict()  # action event id -> call id (bounded)

    def remember(self, event_id: Any, call_id: str) -> None:
        if not _is_id(event_id):
            return  # an `id` that is a list or an object: no observation can name it
        self.calls[event_id] = call_id
        if len(self.calls) > 4096:
            self.calls.popitem(last=False)


def read(transcript: Transcript) -> Stream:
    """Events of every trajectory in the file."""
    source = transcript.source
    found = False
    file_level = _Trajectory(Context(source.default_session, source.name, 1))
    items: Iterator[Any]
    if transcript.layout == "jsonl":
        items = (
            item if isinstance(item, Finding) else ("item", None, *item)
            for item in json_lines(source)
        )
    else:
        items = stream_document(source, ("history", "trajectory"))
    for item in items:
        if isinstance(item, Finding):
            yield item
            continue
        kind, _key, line, obj = item
        if kind != "item":
            continue
        if isinstance(obj, dict) and isinstance(obj.get("history"), list) and "action" not in obj:
            found = True
            name = obj.get("instance_id") or obj.get("id") or f"{source.default_session}:{line}"
            yield from _instance(obj["history"], _Trajectory(Context(str(name), source.name, line)))
            continue
        file_level.ctx.line = line
        found = found or isinstance(obj, dict) and ("action" in obj or "observation" in obj)
        yield from _event(obj, file_level)
    if not found:
        raise not_found(
            source.name,
            "OpenHands events",
            "a trajectory is a list of events with `action` or `observation` members",
        )
    yield from file_level.group.flush()
    yield file_level.ctx.end()


def _instance(history: list[Any], trajectory: _Trajectory) -> Stream:
    for obj in history:
        yield from _event(obj, trajectory)
    yield from trajectory.group.flush()
    yield trajectory.ctx.end()


def _event(obj: Any, t: _Trajectory) -> Stream:
    ctx = t.ctx
    if not isinstance(obj, dict) or not ("action" in obj or "observation" in obj):
        yield ctx.warning(
            "not an OpenHands event (no `action` or `observation`); skipped",
            "bad-message",
        )
        return
    raw_args = obj.get("args")
    args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
    if "action" in obj:
        yield from _action(obj, str(obj["action"]), args, t)
    else:
        yield from _observation(obj, str(obj["observation"]), t)


def _action(obj: dict[str, Any], action: str, args: dict[str, Any], t: _Trajectory) -> Stream:
    ctx, raw_meta = t.ctx, obj.get("tool_call_metadata")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    raw_response = meta.get("model_response")
    response: dict[str, Any] = raw_response if isinstance(raw_response, dict) else {}
    key = str(response.get("id") or f"event{obj.get('id')}")
    if action == "message" and obj.get("source") == "agent" and not meta:
        yield from t.group.part(key, ctx, str(args.get("content") or ""))
    elif action in _NOT_CALLS:
        yield from t.group.flush()
        text = str(args.get("content") or "")
        if action == "message":
            yield ctx.user(text)
        elif action == "system":
            yield ctx.system(text)
        elif action in ("condensation", "summarize"):
            yield ctx.compaction()
    else:
        call_id = str(meta.get("tool_call_id") or f"event{obj.get('id')}")
        function = meta.get("function_name")
        name = function if isinstance(function, str) else action
        t.remember(obj.get("id"), call_id)
        call = ToolCall(call_id, name, _arguments(response, call_id, args))
        yield from t.group.part(key, ctx, str(args.get("thought") or ""), (call,))


def _arguments(response: dict[str, Any], call_id: str, args: dict[str, Any]) -> Any:
    """What the model sent: the tool call in the model response, else the action's own arguments."""
    choices = response.get("choices")
    for choice in choices if isinstance(choices, list) else ():
        message = choice.get("message") if isinstance(choice, dict) else None
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        for call in calls if isinstance(calls, list) else ():
            if (
                isinstance(call, dict)
                and call.get("id") == call_id
                and isinstance(call.get("function"), dict)
            ):
                raw = call["function"].get("arguments")
                try:
                    return jsontext.loads(raw) if isinstance(raw, str) else raw
                except (ValueError, RecursionError):
                    return raw
    return {k: v for k, v in args.items() if k not in _OWN_ARGS}


def _is_id(value: Any) -> bool:
    """An event id as OpenHands writes them (an integer; a text too): usable as a key."""
    return isinstance(value, (int, str, float)) or value is None


def _observation(obj: dict[str, Any], kind: str, t: _Trajectory) -> Stream:
    ctx = t.ctx
    if kind in ("condense", "agent_condensation"):
        yield from t.group.flush()
        yield ctx.compaction()
        return
    cause = obj.get("cause")
    call_id = t.calls.get(cause) if _is_id(cause) else None
    if kind in _SKIPPED_OBSERVATIONS or call_id is None:
        return
    failed = kind in ("error", "user_rejected")
    yield from t.group.result(ctx.result(call_id, obj.get("content"), failed))
