"""Reader of Gemini API `contents`, as Gemini CLI saves a chat (`/chat save`, checkpoints).

A conversation is a list of `Content` objects `{"role": "user"|"model",
"parts": [...]}`: a JSON array (what older Gemini CLI checkpoints hold), an
object whose `history` (checkpoints) or `contents` (an API request) member
holds it, or JSONL with one Content per line. Parts read:

- model `functionCall` (`name`, `args`, optional `id`): the calls of one
  model response (parallel calls are one batch); `text` parts are the reply
  text; parts with `thought: true` are ignored;
- user (or `function`) `functionResponse` (`name`, `response`, optional
  `id`): a call's result, matched by `id`, else by name to the oldest
  unanswered call; a response object with an `error` member and no
  `output` is a failed call. A Content carrying function responses is the
  runtime answering, not a user turn;
- user `text` parts: a user message (one turn).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from loopguard.replay.transcripts import gemini_cli
from loopguard.replay.transcripts.conversation import no_events, read_conversations, system_context
from loopguard.replay.transcripts.events import Context, Stream, ToolCall, Transcript

NAME = "gemini"
LABEL = "Gemini API contents"
# Gemini CLI's chat recordings are format `gemini` too (read by `gemini_cli`).
MARKERS = rf'"parts"\s*:\s*\[|"functionCall"\s*:|"functionResponse"\s*:|{gemini_cli.MARKERS}'


def read(transcript: Transcript) -> Stream:
    return read_conversations(transcript, ("contents", "history"), GeminiTranslator)


def _parts(obj: dict[str, Any]) -> list[dict[str, Any]]:
    parts = obj.get("parts")
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _text(parts: list[dict[str, Any]]) -> str:
    return "\n".join(
        p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")
    )


class GeminiTranslator:
    """Remembers unanswered calls by name, for responses that carry no id."""

    def __init__(self) -> None:
        self._pending: dict[str, deque[str]] = {}

    flush = staticmethod(no_events)

    def field(self, key: str, value: Any, ctx: Context) -> Stream:
        if key in ("systemInstruction", "system_instruction") and isinstance(value, dict):
            return system_context(_text(_parts(value)), ctx)
        return no_events(ctx)

    def message(self, obj: dict[str, Any], ctx: Context) -> Stream:
        role = obj.get("role")
        parts = _parts(obj)
        if role == "model":
            yield from self._model(parts, ctx)
        elif role in ("user", "function"):
            yield from self._user(parts, ctx)
        else:
            yield ctx.warning(
                f"content with unknown role {role!r}; skipped",
                "bad-message",
                hint="Gemini roles are user and model",
            )

    def _model(self, parts: list[dict[str, Any]], ctx: Context) -> Stream:
        calls: list[ToolCall] = []
        for index, part in enumerate(parts):
            call = part.get("functionCall")
            if not isinstance(call, dict):
                continue
            if not isinstance(call.get("name"), str):
                yield ctx.warning(
                    f"functionCall part #{index + 1} has no name; skipped", "bad-call"
                )
                continue
            call_id = ctx.call_id(call.get("id"), index)
            self._pending.setdefault(call["name"], deque()).append(call_id)
            calls.append(ToolCall(call_id, call["name"], call.get("args") or {}))
        yield ctx.reply(_text(parts), tuple(calls))

    def _user(self, parts: list[dict[str, Any]], ctx: Context) -> Stream:
        responses = [
            p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)
        ]
        if not responses:
            yield ctx.user(_text(parts))
            return
        for response in responses:
            name = response.get("name")
            queue = self._pending.get(name) if isinstance(name, str) else None
            call_id = response.get("id")
            if call_id and queue and str(call_id) in queue:
                queue.remove(str(call_id))
            elif not call_id and queue:
                call_id = queue.popleft()
            body = response.get("response")
            failed = isinstance(body, dict) and "error" in body and "output" not in body
            yield ctx.result(
                str(call_id or ""), body, failed, name if isinstance(name, str) else None
            )
