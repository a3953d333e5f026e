"""Reader of OpenAI Codex CLI sessions (rollout files, `~/.codex/sessions/**/rollout-*.jsonl`).

JSONL, one `RolloutLine` per line: `{"timestamp", "type", "payload"}` with
`type` one of `session_meta`, `response_item`, `compacted`, `turn_context`,
`event_msg`. Read:

- `response_item`: a Responses API item, read as `openai-responses` reads
  it: `message` (`role`, `input_text`/`output_text` parts), `function_call`
  (`name`, `arguments` JSON text, `call_id`), `function_call_output`
  (`call_id`, `output`: text, content items, or `{content, success}` where
  `success: false` is a failed call), `custom_tool_call(_output)`,
  `local_shell_call` (`call_id`, `action`: a call named `local_shell` with
  the action as arguments); an assistant message and the calls after it are
  one response, so parallel calls stay one batch. User messages that Codex
  writes itself (`<environment_context>`, `<user_instructions>`, AGENTS.md
  instructions) are system context, not turns. `reasoning` and
  `ghost_snapshot` items are skipped.
- `compacted` (and a `compaction` item): a context compaction.
- `session_meta`, `turn_context`, `event_msg` repeat what the items say (or
  are bookkeeping) and are skipped.

Older rollouts (2025) wrote the items bare, one per line, after a first
`{"id", "timestamp", "instructions"}` line, with `{"record_type": "state"}`
lines between; those are read too.
"""

from __future__ import annotations

from typing import Any

from loopguard.findings import Finding
from loopguard.replay.transcripts.events import Context, Stream, Transcript
from loopguard.replay.transcripts.openai_responses import ResponsesTranslator, type_of
from loopguard.replay.transcripts.source import json_lines

NAME = "codex"
LABEL = "Codex CLI rollout"
MARKERS = (
    r'"type"\s*:\s*"(?:session_meta|response_item|turn_context|event_msg)"\s*,\s*"payload"'
    r'|"record_type"\s*:\s*"state"'
)
_BOOKKEEPING = frozenset({"session_meta", "turn_context", "event_msg"})
_SKIPPED_ITEMS = frozenset({"ghost_snapshot", "reasoning", "web_search_call"})
_INJECTED = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<user_shell_command>",
)


def read(transcript: Transcript) -> Stream:
    """Events of one Codex rollout file (one session)."""
    source = transcript.source
    translator = ResponsesTranslator()
    ctx = Context(source.default_session, source.name, 1)
    named = False  # the session id is taken from the first meta line, before any event
    for item in json_lines(source):
        if isinstance(item, Finding):
            yield item
            continue
        ctx.line, obj = item
        if not isinstance(obj, dict):
            yield ctx.warning("not a rollout line (expected a JSON object); skipped", "bad-message")
            continue
        kind = type_of(obj.get("type"))
        legacy = _is_legacy_meta(obj, ctx.line)
        if not named and (legacy or kind == "session_meta"):
            ident = obj.get("id") if legacy else _payload_id(obj.get("payload"))
            if isinstance(ident, str) and ident:
                ctx.session = ident
        if "payload" in obj and kind in _BOOKKEEPING or "record_type" in obj or legacy:
            continue
        named = True
        if kind == "compacted" and "payload" in obj:
            yield from translator.flush(ctx)
            yield ctx.compaction()
            continue
        payload = obj.get("payload") if kind == "response_item" else obj
        if not isinstance(payload, dict):
            yield ctx.warning(f"rollout line of type {kind!r} has no item; skipped", "bad-message")
            continue
        yield from _item(payload, translator, ctx)
    yield from translator.flush(ctx)
    yield ctx.end()


def _payload_id(payload: Any) -> Any:
    return payload.get("id") if isinstance(payload, dict) else None


def _is_legacy_meta(obj: dict[str, Any], line: int) -> bool:
    return (
        line == 1 and "type" not in obj and "role" not in obj and "id" in obj and "timestamp" in obj
    )


def _item(item: dict[str, Any], translator: ResponsesTranslator, ctx: Context) -> Stream:
    kind = type_of(item.get("type", "message"))
    if kind in _SKIPPED_ITEMS:
        return
    if kind in ("compaction", "compaction_summary"):
        yield from translator.flush(ctx)
        yield ctx.compaction()
        return
    if kind == "local_shell_call":
        item = {
            "type": "function_call",
            "name": "local_shell",
            "call_id": item.get("call_id") or item.get("id"),
            "arguments": item.get("action") or {},
        }
    elif kind == "function_call_output" and isinstance(item.get("output"), dict):
        output = item["output"]
        item = {**item, "output": output.get("content"), "is_error": output.get("success") is False}
    elif kind == "message" and item.get("role") == "user" and _injected(item.get("content")):
        item = {**item, "role": "developer"}
    yield from translator.message(item, ctx)


def _injected(content: Any) -> bool:
    """True for user messages Codex writes itself (context, instructions), not the person."""
    parts = content if isinstance(content, list) else [{"text": content}]
    texts = [
        str(p["text"]) for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
    ]
    return bool(texts) and all(t.lstrip().startswith(_INJECTED) for t in texts)
