"""The shared driver of the conversation formats (OpenAI Chat, OpenAI Responses,
Anthropic Messages, Gemini API contents).

All come in the same containers, which this module walks:
- a JSON array of messages, or an object whose list member (`messages`;
  `input`/`output` for Responses, `contents`/`history` for Gemini) holds them:
  one conversation, named after the file;
- a JSON array of such objects: one conversation per element;
- JSONL with one message per line (one conversation for the file), or one
  conversation object per line (the shape of fine-tuning and eval datasets),
  each named `file:line` unless it carries `session_id`, `id` or `custom_id`.

A `Translator` turns each message of its format into events. An element that
another generic format claims (`Transcript.claimed_by`) stops the replay with a
"mixed formats" error; any other odd element is skipped with a warning.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from loopguard.findings import Finding
from loopguard.replay.transcripts.events import Context, Stream, Transcript
from loopguard.replay.transcripts.jsonstream import stream_document
from loopguard.replay.transcripts.source import input_error, json_lines


class Translator(Protocol):
    """Turns the messages of one conversation into events (may keep state)."""

    def message(self, obj: dict[str, Any], ctx: Context) -> Stream: ...
    def field(self, key: str, value: Any, ctx: Context) -> Stream: ...
    def flush(self, ctx: Context) -> Stream: ...


@dataclass
class _Format:
    """The conversation format being read: the transcript, its list members, its translator."""

    transcript: Transcript
    list_keys: tuple[str, ...]
    new_translator: Callable[[], Translator]


@dataclass
class _State:
    found: bool = False  # at least one message object or conversation was seen
    file_level: bool = False  # the file itself is one conversation (not one per line/element)


def read_conversations(
    transcript: Transcript, list_keys: tuple[str, ...], new_translator: Callable[[], Translator]
) -> Stream:
    """Events of every conversation in the transcript, whose messages `new_translator()`'s
    translator reads; `list_keys` are the container members that hold them."""
    fmt = _Format(transcript, list_keys, new_translator)
    if transcript.layout == "jsonl":
        yield from _jsonl(fmt)
    else:
        yield from _document(fmt)


def system_context(text: str, ctx: Context) -> Stream:
    """A container member that is system context (`system`, `instructions`, `systemInstruction`)."""
    if text:
        yield ctx.system(text)


def no_events(ctx: Context) -> Stream:
    """`Translator.flush` of a translator that holds nothing back."""
    return iter(())


def _is_conversation(obj: Any, fmt: _Format) -> bool:
    return (
        isinstance(obj, dict)
        and "role" not in obj
        and any(isinstance(obj.get(key), list) for key in fmt.list_keys)
    )


def _session_name(obj: dict[str, Any], default: str) -> str:
    for key in ("session_id", "id", "custom_id"):
        if isinstance(obj.get(key), (str, int)) and not isinstance(obj.get(key), bool):
            return str(obj[key])
    metadata = obj.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("session_id"), str):
        return metadata["session_id"]
    return default


def _whole_conversation(obj: dict[str, Any], fmt: _Format, ctx: Context) -> Stream:
    """A conversation object already in memory (one JSONL line or one array element)."""
    translator = fmt.new_translator()
    for key, value in obj.items():
        if key in fmt.list_keys and isinstance(value, list):
            for item in value:
                yield from _element(item, translator, fmt, ctx)
        else:
            yield from translator.field(key, value, ctx)
    yield from translator.flush(ctx)
    yield ctx.end()


def _element(obj: Any, translator: Translator, fmt: _Format, ctx: Context) -> Stream:
    name = fmt.transcript.format
    other = fmt.transcript.claimed_by(obj)
    if other is not None and other != name:
        raise input_error(
            ctx.file,
            ctx.line,
            f"mixed formats: this element looks like {other} but the file was read as {name}",
            code="mixed-formats",
            hint="split the file, or pass --input-format if detection guessed wrong",
        )
    if not isinstance(obj, dict):
        yield ctx.warning(
            f"expected a {fmt.transcript.label} message object, found {type(obj).__name__}; "
            "skipped",
            "bad-message",
        )
        return
    yield from translator.message(obj, ctx)


def _jsonl(fmt: _Format) -> Stream:
    source = fmt.transcript.source
    name = source.default_session
    translator = fmt.new_translator()
    ctx = Context(name, source.name, 0)
    state = _State()
    for item in json_lines(source):
        if isinstance(item, Finding):
            yield item
            continue
        line, obj = item
        if _is_conversation(obj, fmt):
            state.found = True
            session = _session_name(obj, f"{name}:{line}")
            yield from _whole_conversation(obj, fmt, Context(session, source.name, line))
        else:
            ctx.line = line
            state.found = state.found or isinstance(obj, dict)
            state.file_level = True
            yield from _element(obj, translator, fmt, ctx)
    yield from _finish(state, fmt, translator, ctx)


def _document(fmt: _Format) -> Stream:
    source = fmt.transcript.source
    name = source.default_session
    translator = fmt.new_translator()
    ctx = Context(name, source.name, 1)
    seen_items = False
    state = _State()
    for kind, key, line, value in stream_document(source, fmt.list_keys):
        ctx.line = line
        if kind == "field":
            if key in ("session_id", "id") and isinstance(value, str) and not seen_items:
                ctx.session = value
            yield from translator.field(str(key), value, ctx)
        elif key is None and _is_conversation(value, fmt):
            state.found = True
            session = _session_name(value, f"{name}:{line}")
            yield from _whole_conversation(value, fmt, Context(session, source.name, line))
        else:
            seen_items = True
            state.found = state.found or isinstance(value, dict)
            state.file_level = True
            yield from _element(value, translator, fmt, ctx)
    yield from _finish(state, fmt, translator, ctx)


def _finish(state: _State, fmt: _Format, translator: Translator, ctx: Context) -> Stream:
    """End of a file: no conversation at all is an error; else flush the file-level one."""
    if not state.found:
        raise _no_messages(fmt)
    yield from translator.flush(ctx)
    if state.file_level:
        yield ctx.end()


def _no_messages(fmt: _Format) -> Exception:
    keys = " or ".join(f"`{key}`" for key in fmt.list_keys)
    return input_error(
        fmt.transcript.source.name,
        1,
        f"no {fmt.transcript.label} messages found in this JSON document",
        code="wrong-shape",
        hint=f"expected an array of messages, or an object with a {keys} list",
    )
