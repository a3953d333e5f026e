"""Reader of Gemini CLI's own chat recordings (`~/.gemini/tmp/<project>/chats/session-*.json[l]`).

Gemini CLI records every session it runs (its ChatRecordingService), in one of two layouts:

- up to 2026-04: `session-<time>-<id8>.json`, one object `{"sessionId", "projectHash",
  "startTime", "lastUpdated", "messages": [...], "kind"?, "summary"?}`;
- since: `session-<time>-<id8>.jsonl` (a sub-agent's `chats/<parent id>/<id>.jsonl`): a first
  line with the same metadata, then one line per message *version*: a message is written again,
  under the same `id`, each time it grows (its tokens, its tool calls and their results), so
  the last line of an id is the message; `{"$set": {...}}` (metadata, or the whole message list
  rewritten) and `{"$rewindTo": id}` lines are bookkeeping.

A message is `{"id", "timestamp", "type", "content", ...}`; `content` is text, a part or a list
of parts (`text`; `thought: true` parts are ignored). Read:

- `type: "user"`: a user message (one turn), unless its parts are function responses (the CLI
  answering the model, whose results the tool calls already hold);
- `type: "gemini"`: one model response: its text, and its `toolCalls` (`id`, `name`, `args`)
  as the calls of one batch, each answered by its `result` (`functionResponse` parts: the
  `response` is the result, as the API-contents reader gives it; else the parts' text, else
  `resultDisplay`) once its `status` is final; `error` and `cancelled` are failed calls, and so
  is a response with an `error` and no `output`. A message without `toolCalls` takes its calls
  from `functionCall` parts, answered by a later user message's `functionResponse` parts;
- `info`, `error`, `warning`: the CLI's notices, skipped.

The session is named by its `sessionId` (a sub-agent's recording has its own), else the file.
"""

from __future__ import annotations

import re
from typing import Any

from loopguard.findings import Finding
from loopguard.replay.transcripts.events import (
    Context,
    Stream,
    ToolCall,
    ToolResult,
    Transcript,
    transcript_text,
)
from loopguard.replay.transcripts.jsonstream import stream_document
from loopguard.replay.transcripts.source import Source, json_lines, not_found, warning

NAME = "gemini"
LABEL = "Gemini CLI chat recording"
# Keys only the recordings write: the metadata's projectHash, a model message's type.
MARKERS = r'"projectHash"\s*:|"type"\s*:\s*"gemini"'
_RECORDING = re.compile(MARKERS)
_NOTICES = frozenset({"info", "error", "warning"})
_FINAL = frozenset({"success", "error", "cancelled"})
_FAILED = frozenset({"error", "cancelled"})


def is_recording(head: str) -> bool:
    """True when the head of a `gemini` file is a chat recording (not API `contents`)."""
    return bool(_RECORDING.search(head))


def _parts(content: Any) -> list[Any]:
    if isinstance(content, list):
        return content
    return [] if content is None else [content]


def _text(content: Any) -> str:
    parts = [
        p
        for p in _parts(content)
        if isinstance(p, str) or (isinstance(p, dict) and not p.get("thought"))
    ]
    return transcript_text(parts)


def _responses(content: Any) -> list[dict[str, Any]]:
    return [
        p["functionResponse"]
        for p in _parts(content)
        if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)
    ]


class _Recording:
    """One recording's session and the calls still waiting for a result."""

    def __init__(self, source: Source) -> None:
        self.ctx = Context(source.default_session, source.name, 1)
        self.pending: dict[str, str] = {}  # call id -> tool name, answered by later parts
        self.seen: set[str] = set()  # message ids already fed
        self.found = False

    def named(self, meta: dict[str, Any]) -> None:
        """The session id of the metadata, before any message was fed."""
        ident = meta.get("sessionId")
        if isinstance(ident, str) and ident and not self.found:
            self.ctx.session = ident

    def message(self, obj: dict[str, Any], line: int) -> Stream:
        self.ctx.line = line
        kind = obj.get("type")
        ident = obj.get("id")
        if isinstance(ident, str):
            if ident in self.seen:
                return  # rewritten later (a history rewrite): its calls were fed already
            self.seen.add(ident)
        self.found = True
        if kind == "user":
            yield from self._user(obj.get("content"))
        elif kind == "gemini":
            yield from self._model(obj)
        elif not _is(kind, _NOTICES):
            yield self.ctx.warning(
                f"message of unknown type {kind!r}; skipped",
                "bad-message",
                hint="Gemini CLI message types are user, gemini, info, error and warning",
            )

    def _user(self, content: Any) -> Stream:
        ctx = self.ctx
        responses = _responses(content)
        if not responses:
            yield ctx.user(_text(content))
            return
        for response in responses:  # the CLI answering calls taken from functionCall parts
            call_id = str(response.get("id") or "")
            if call_id in self.pending:
                del self.pending[call_id]
                yield self._result(call_id, response.get("name"), response.get("response"), "")

    def _model(self, obj: dict[str, Any]) -> Stream:
        ctx = self.ctx
        content = obj.get("content")
        records = obj.get("toolCalls")
        calls: list[ToolCall] = []
        results: list[ToolResult] = []
        if isinstance(records, list) and records:
            for index, record in enumerate(records):
                if not isinstance(record, dict) or not isinstance(record.get("name"), str):
                    yield ctx.warning(f"tool call #{index + 1} has no name; skipped", "bad-call")
                    continue
                call_id = ctx.call_id(record.get("id"), index)
                calls.append(ToolCall(call_id, record["name"], _args(record.get("args"))))
                if _is(record.get("status"), _FINAL):
                    results.append(self._recorded_result(call_id, record))
        else:
            for index, part in enumerate(_parts(content)):
                call = part.get("functionCall") if isinstance(part, dict) else None
                if isinstance(call, dict) and isinstance(call.get("name"), str):
                    call_id = ctx.call_id(call.get("id"), index)
                    self.pending[call_id] = call["name"]
                    calls.append(ToolCall(call_id, call["name"], _args(call.get("args"))))
        yield ctx.reply(_text(content), tuple(calls))
        yield from results

    def _recorded_result(self, call_id: str, record: dict[str, Any]) -> ToolResult:
        responses = [r for r in _responses(record.get("result")) if r.get("id") in (None, call_id)]
        if responses:
            body = responses[0].get("response")
        else:
            body = _text(record.get("result"))
            if not body and isinstance(record.get("resultDisplay"), str):
                body = record["resultDisplay"]
        return self._result(call_id, record.get("name"), body, str(record.get("status")))

    def _result(self, call_id: str, name: Any, body: Any, status: str) -> ToolResult:
        failed = _is(status, _FAILED) or (
            isinstance(body, dict) and "error" in body and "output" not in body
        )
        return self.ctx.result(call_id, body, failed, name if isinstance(name, str) else None)


def _is(value: Any, names: frozenset[str]) -> bool:
    """`value in names` for any recorded value (a list or a mapping is no name)."""
    return isinstance(value, str) and value in names


def _args(value: Any) -> Any:
    return {} if value is None else value


def read(transcript: Transcript) -> Stream:
    """Events of one Gemini CLI chat recording (one session)."""
    source = transcript.source
    rec = _Recording(source)
    if transcript.layout == "jsonl":
        yield from _jsonl(source, rec)
    else:
        for kind, key, line, value in stream_document(source, ("messages",)):
            if kind == "field" and key == "sessionId":
                rec.named({"sessionId": value})
            elif kind == "item" and key == "messages":
                if isinstance(value, dict):
                    yield from rec.message(value, line)
                else:
                    yield _not_a_message(source, line)
    if not rec.found:
        raise not_found(
            source.name,
            "Gemini CLI chat messages",
            'a recording is {"sessionId", ..., "messages": [...]}, or JSONL of its lines',
        )
    yield rec.ctx.end()


def _jsonl(source: Source, rec: _Recording) -> Stream:
    """The recording's lines; a message is fed once its last version is known."""
    held: tuple[int, dict[str, Any]] | None = None
    for item in json_lines(source):
        if isinstance(item, Finding):
            yield item
            continue
        line, obj = item
        if not isinstance(obj, dict):
            yield _not_a_message(source, line)
            continue
        if "id" in obj and "type" in obj:
            if _is(obj["type"], _NOTICES):
                continue  # a notice (even between versions of a message) changes nothing
            if held is not None and held[1].get("id") != obj.get("id"):
                yield from rec.message(held[1], held[0])
            held = (line, obj)
        elif "$set" in obj or "$rewindTo" in obj:
            continue  # bookkeeping: metadata, a history rewrite, a rewind
        elif "sessionId" in obj:
            rec.named(obj)
        else:
            yield _not_a_message(source, line)
    if held is not None:
        yield from rec.message(held[1], held[0])


def _not_a_message(source: Source, line: int) -> Finding:
    return warning(source.name, line, "not a Gemini CLI message; skipped", "bad-message")
