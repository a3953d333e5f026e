"""Reader of loopguard's own event log: JSONL, one event per line.

Every line is an object with an `event` member; `session_id` and `run_id`
are optional (a missing session id means "the file's one session"), `ts` is
free-form and ignored. Events:

    {"event": "system_message", "text": "..."}
    {"event": "user_message", "text": "..."}
    {"event": "assistant_message", "text": "...",
     "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a.py"}}]}
    {"event": "tool_result", "call_id": "c1", "name": "read_file", "content": "...",
     "is_error": false}
    {"event": "compaction"}
    {"event": "session_end"}

`arguments` may be an object or a JSON string; `content` any JSON value.
The JSON Schema is `loopguard/schemas/events.schema.json`. Lines that do not
fit are skipped with a warning naming the line; the replay goes on.
"""

from __future__ import annotations

from typing import Any

from loopguard.findings import Finding
from loopguard.replay.transcripts.events import Context, Stream, Transcript
from loopguard.replay.transcripts.source import input_error, json_lines, not_found, warning

NAME = "eventlog"
LABEL = "loopguard event log"
EVENTS = (
    "system_message",
    "user_message",
    "assistant_message",
    "tool_result",
    "compaction",
    "session_end",
)
MARKERS = r'"event"\s*:\s*"(?:' + "|".join(EVENTS) + ')"'


def claims(obj: Any) -> bool:
    """True for objects with an `event` member naming an event-log event."""
    return isinstance(obj, dict) and obj.get("event") in EVENTS and "role" not in obj


def read(transcript: Transcript) -> Stream:
    """Events of every session in the log, in file order."""
    source = transcript.source
    found = False
    for item in json_lines(source):
        if isinstance(item, Finding):
            yield item
            continue
        line, obj = item
        if not claims(obj):
            yield from _not_an_event(obj, transcript, line)
            continue
        found = True
        session = obj.get("session_id")
        run = obj.get("run_id")
        ctx = Context(
            str(session) if session is not None else source.default_session,
            source.name,
            line,
            str(run) if run is not None else None,
        )
        yield from _event(obj, ctx)
    if not found:
        raise not_found(
            source.name,
            "loopguard events",
            'each line must be an object like {"event": "user_message", "text": "..."}',
        )


def _not_an_event(obj: Any, transcript: Transcript, line: int) -> Stream:
    file = transcript.source.name
    other = transcript.claimed_by(obj)
    if other is not None:
        raise input_error(
            file,
            line,
            f"mixed formats: this line looks like {other} but the file was read "
            "as a loopguard event log",
            code="mixed-formats",
            hint="split the file, or pass --input-format if detection guessed wrong",
        )
    kind = obj.get("event") if isinstance(obj, dict) else None
    what = (
        f"unknown event {kind!r}"
        if kind is not None
        else "not a loopguard event (no `event` member)"
    )
    yield warning(file, line, f"{what}; skipped", "bad-event", hint="events: " + ", ".join(EVENTS))


def _text(obj: dict[str, Any]) -> str:
    text = obj.get("text")
    return text if isinstance(text, str) else ""


def _event(obj: dict[str, Any], ctx: Context) -> Stream:
    kind = obj["event"]
    if kind == "user_message":
        yield ctx.user(_text(obj))
    elif kind == "system_message":
        yield ctx.system(_text(obj))
    elif kind == "assistant_message":
        raw_calls = obj.get("tool_calls") or []
        yield from ctx.reply_calling(
            _text(obj), raw_calls if isinstance(raw_calls, list) else [], False
        )
    elif kind == "tool_result":
        name = obj.get("name")
        yield ctx.result(
            str(obj.get("call_id") or ""),
            obj.get("content"),
            bool(obj.get("is_error")),
            name if isinstance(name, str) else None,
        )
    elif kind == "compaction":
        yield ctx.compaction()
    else:
        yield ctx.end()
