"""Reader of OpenTelemetry traces as JSON: the tool calls an instrumented agent made.

Shapes read, in one JSON document or one value per line (JSONL):
- OTLP JSON, as the collector's file exporter and the OTLP/HTTP JSON encoding write it:
  `{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}` (also `batches` and the older
  `instrumentationLibrarySpans`), attributes as `[{"key", "value": {"stringValue": ...}}]`;
- the Python SDK's own span JSON (`ReadableSpan.to_json()`, what `ConsoleSpanExporter`
  prints): `{"name", "context": {"trace_id", "span_id"}, "parent_id", "start_time",
  "status", "attributes": {...}}`, one per line or in an array.

A tool call is a span with `gen_ai.operation.name` = `execute_tool` (GenAI semantic
conventions: `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.call.arguments`,
`gen_ai.tool.call.result`) or `openinference.span.kind` = `TOOL` (OpenInference:
`tool.name`, `tool.id`, `input.value`, `output.value`). An error status or an `error.type`
attribute is a failed call (its text: the status message, else the exception event's
message, else `error.type`).

Sessions: `gen_ai.conversation.id` (or OpenInference's `session.id`) on the span or its
nearest ancestor that has one, else the trace. Each trace of a session is one turn. Calls
are fed in start-time order; calls with the same parent span and no model call (a `chat`,
`generate_content` or `text_completion` span, an OpenInference `LLM` span) starting between
them are one round, as one model response's calls are.

Arguments and results are opt-in content in both conventions: a call without them is fed
with `{}` / no result (so only its tool name counts), and the file gets one
`content-not-captured` input warning per missing kind, which fails `replay --fail-on`.

Exporters write a span when it ends, children before their parents, so the whole file is
read before the first call is fed: every span's parent, trace and session marker is kept
(a few hundred bytes a span), and tool spans with their arguments and results.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from loopguard.findings import Finding
from loopguard.replay.transcripts.events import Context, Stream, ToolCall, Transcript
from loopguard.replay.transcripts.jsonstream import _Cursor, stream_document
from loopguard.replay.transcripts.source import Source, json_lines, not_found, warning
from loopguard.text import jsontext

NAME = "otlp"
LABEL = "OpenTelemetry trace (OTLP JSON)"
MARKERS = (
    r'"(?:resourceSpans|scopeSpans|instrumentationLibrarySpans|spanId|parentSpanId|'
    r'startTimeUnixNano)"\s*:|"context"\s*:\s*\{\s*"trace_id"\s*:'
)
NOT_CAPTURED = "content-not-captured"
_CONTAINERS = ("resourceSpans", "batches")
_SCOPES = ("scopeSpans", "instrumentationLibrarySpans")
_MODEL_OPERATIONS = frozenset({"chat", "generate_content", "text_completion"})
_ERROR_CODES = frozenset({2, "2", "STATUS_CODE_ERROR", "ERROR", "StatusCode.ERROR"})
_STREAMED = re.compile(r'\s*(?:\[|\{\s*"(?:resourceSpans|batches)"\s*:)')
_ANCESTORS_MAX = 256  # parent links followed to find a session marker (a cycle stops too)


@dataclass(slots=True)
class _Node:
    """What every span keeps: its trace, its parent and the session marker it carries."""

    trace: str
    parent: str
    conversation: str | None


@dataclass(slots=True)
class _Tool:
    """One tool span, as a call."""

    order: int
    span: str
    trace: str
    parent: str
    start: int
    line: int
    name: str
    call_id: str
    arguments: Any
    has_arguments: bool
    result: Any
    has_result: bool
    failed: bool
    error: str


@dataclass
class _Index:
    """Every span read so far."""

    nodes: dict[str, _Node] = field(default_factory=dict)
    tools: list[_Tool] = field(default_factory=list)
    models: dict[str, list[int]] = field(default_factory=dict)  # trace -> model call starts
    spans: int = 0


def read(transcript: Transcript) -> Stream:
    """Events of every session in the trace file (see the module docstring)."""
    source = transcript.source
    index = _Index()
    elements: Iterator[Any]
    if transcript.layout == "jsonl":
        elements = (
            item if isinstance(item, Finding) else ("item", None, *item)
            for item in json_lines(source)
        )
    elif _STREAMED.match(source.head()):
        elements = stream_document(source, _CONTAINERS)  # one resource entry at a time
    else:
        elements = _values(source)
    for item in elements:
        if isinstance(item, Finding):
            yield item
            continue
        kind, key, line, value = item
        if kind == "field":
            if key not in _CONTAINERS:
                continue  # other top-level members of a document
            value = value if isinstance(value, list) else [value]
            for element in value:
                yield from _element(element, line, index, source.name, key)
            continue
        yield from _element(value, line, index, source.name, key)
    if not index.spans:
        raise not_found(
            source.name,
            "spans",
            'an OTLP JSON trace is {"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}',
        )
    yield from _sessions(index, source.name)


# -- reading spans ------------------------------------------------------------------------
def _values(source: Source) -> Iterator[tuple[str, None, int, Any]]:
    """Every JSON value of the file, one after the other: a document, an array, or values
    written back to back (`ConsoleSpanExporter` prints indented span objects one after
    another)."""
    cursor = _Cursor(source)
    while cursor.peek():
        line = cursor.line
        yield "item", None, line, cursor.value()


def _element(
    value: Any, line: int, index: _Index, file: str, key: str | None, nested: bool = False
) -> Stream:
    """One streamed value: a resource entry, an export request, a span, or a list of them."""
    if key in _CONTAINERS:
        yield from _resource(value, line, index, file)
        return
    if isinstance(value, list) and not nested:
        for element in value:
            yield from _element(element, line, index, file, None, True)
        return
    if isinstance(value, dict):
        containers = [value[name] for name in _CONTAINERS if isinstance(value.get(name), list)]
        if containers:
            for resources in containers:
                for resource in resources:
                    yield from _resource(resource, line, index, file)
            return
        if any(isinstance(value.get(name), list) for name in _SCOPES):
            yield from _resource(value, line, index, file)
            return
        if isinstance(value.get("context"), dict) and "name" in value:
            _add(_as_otlp(value), line, index)
            return
    yield warning(
        file,
        line,
        "not an OpenTelemetry export request or span; skipped",
        "bad-message",
        hint="expected resourceSpans (OTLP JSON) or a span with a context (Python SDK JSON)",
    )


def _resource(resource: Any, line: int, index: _Index, file: str) -> Stream:
    if not isinstance(resource, dict):
        yield warning(file, line, "a resourceSpans entry is not an object; skipped", "bad-message")
        return
    for scopes_key in _SCOPES:
        scopes = resource.get(scopes_key)
        for scope in scopes if isinstance(scopes, list) else ():
            spans = scope.get("spans") if isinstance(scope, dict) else None
            for span in spans if isinstance(spans, list) else ():
                if isinstance(span, dict):
                    _add(span, line, index)
                else:
                    yield warning(file, line, "a span is not an object; skipped", "bad-message")


def _as_otlp(span: dict[str, Any]) -> dict[str, Any]:
    """A span of the Python SDK's JSON with the members OTLP JSON names them by."""
    context, status = span["context"], _dict(span.get("status"))
    return {
        "traceId": context.get("trace_id"),
        "spanId": context.get("span_id"),
        "parentSpanId": span.get("parent_id"),
        "name": span.get("name"),
        "startTimeUnixNano": _iso_nanos(span.get("start_time")),
        "attributes": _dict(span.get("attributes")),
        "status": {"code": status.get("status_code"), "message": status.get("description")},
        "events": [
            {"name": event.get("name"), "attributes": _dict(event.get("attributes"))}
            for event in _list(span.get("events"))
            if isinstance(event, dict)
        ],
    }


def _add(span: dict[str, Any], line: int, index: _Index) -> None:
    """Index one OTLP JSON span: its place in the trace, and a tool call's data."""
    trace, parent = _text(span.get("traceId")), _text(span.get("parentSpanId"))
    attributes = _otlp_attributes(span.get("attributes"))
    start = _int(span.get("startTimeUnixNano"))
    index.spans += 1
    span_id = _text(span.get("spanId")) or f"#{index.spans}"  # a span without an id: no parent
    conversation = attributes.get("gen_ai.conversation.id") or attributes.get("session.id")
    index.nodes[span_id] = _Node(
        trace, parent, None if conversation is None else _text(conversation)
    )
    operation = _label(attributes.get("gen_ai.operation.name"))
    kind = attributes.get("openinference.span.kind")
    kind = kind.upper() if isinstance(kind, str) else None
    if operation in _MODEL_OPERATIONS or kind == "LLM":
        index.models.setdefault(trace, []).append(start)
        return
    if operation == "execute_tool":
        tool_name = attributes.get("gen_ai.tool.name")
        call_id = attributes.get("gen_ai.tool.call.id")
        args_key, result_key = "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"
        prefix = "execute_tool "
    elif kind == "TOOL":
        tool_name = attributes.get("tool.name")
        call_id = attributes.get("tool.id") or attributes.get("tool_call.id")
        args_key, result_key = "input.value", "output.value"
        prefix = ""
    else:
        return
    name = _text(span.get("name"))
    if not isinstance(tool_name, str) or not tool_name:
        tool_name = name[len(prefix) :] if prefix and name.startswith(prefix) else name
    status = _dict(span.get("status"))
    error_type = attributes.get("error.type")
    failed = _label(status.get("code")) in _ERROR_CODES or error_type is not None
    error = ""
    if failed:
        events = [
            (_text(event.get("name")), _otlp_attributes(event.get("attributes")))
            for event in _list(span.get("events"))
            if isinstance(event, dict)
        ]
        error = (
            _text(status.get("message")) or _exception_text(events) or _text(error_type) or "error"
        )
    index.tools.append(
        _Tool(
            len(index.tools),
            span_id,
            trace,
            parent,
            start,
            line,
            tool_name or "unknown",
            _text(call_id) if call_id is not None else span_id,
            _value(attributes[args_key]) if args_key in attributes else {},
            args_key in attributes,
            _value(attributes[result_key]) if result_key in attributes else None,
            result_key in attributes,
            failed,
            error,
        )
    )


def _exception_text(events: list[tuple[str, Any]]) -> str:
    for name, attributes in events:
        if name == "exception" and isinstance(attributes, dict):
            message = attributes.get("exception.message") or attributes.get("exception.type")
            if message:
                return _text(message)
    return ""


# -- values ---------------------------------------------------------------------------------
def _otlp_attributes(raw: Any) -> dict[str, Any]:
    """OTLP `[{"key", "value": AnyValue}]` as a dict (a dict is taken as it is)."""
    if isinstance(raw, dict):
        return raw
    found: dict[str, Any] = {}
    for item in raw if isinstance(raw, list) else ():
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            found[item["key"]] = _any_value(item.get("value"))
    return found


def _any_value(value: Any, depth: int = 0) -> Any:
    """An OTLP AnyValue as plain JSON data."""
    if not isinstance(value, dict) or depth > 64:
        return value
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return _int(value["intValue"], value["intValue"])
    if "arrayValue" in value:
        return [_any_value(item, depth + 1) for item in _members(value["arrayValue"])]
    if "kvlistValue" in value:
        values = _members(value["kvlistValue"])
        return {
            item.get("key"): _any_value(item.get("value"), depth + 1)
            for item in values
            if isinstance(item, dict) and isinstance(item.get("key"), str)
        }
    return None


def _value(raw: Any) -> Any:
    """Recorded content: a JSON object or array given as text is parsed; other text stays."""
    if isinstance(raw, str) and raw.lstrip()[:1] in ("{", "["):
        try:
            return jsontext.loads(raw)
        except (ValueError, RecursionError):
            return raw
    return raw


def _dict(value: Any) -> dict[str, Any]:
    """`value` when it is an object, else an empty one."""
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    """`value` when it is a list, else nothing."""
    return value if isinstance(value, list) else []


def _members(holder: Any) -> list[Any]:
    """The `values` list of an OTLP arrayValue or kvlistValue."""
    return _list(holder.get("values")) if isinstance(holder, dict) else []


def _label(value: Any) -> str | int | None:
    """A value to look up in a set of known names or codes (anything unhashable is None)."""
    return value if isinstance(value, (str, int)) else None


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _int(value: Any, default: Any = 0) -> Any:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return default


def _iso_nanos(value: Any) -> int:
    """An ISO 8601 time (`2026-12-02T01:03:55.040340Z`) as Unix nanoseconds (0 if not one)."""
    if not isinstance(value, str):
        return _int(value)
    try:
        moment = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
        return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000
    except (ValueError, OverflowError, OSError):
        return 0


# -- sessions -------------------------------------------------------------------------------
def _session_of(tool: _Tool, nodes: dict[str, _Node], memo: dict[str, str | None]) -> str:
    """The conversation id on the span or its nearest ancestor, else the trace."""
    seen: list[str] = []
    span: str | None = tool.span
    found: str | None = None
    while span and len(seen) < _ANCESTORS_MAX:
        if span in memo:
            found = memo[span]
            break
        node = nodes.get(span)
        if node is None:
            break
        seen.append(span)
        if node.conversation:
            found = node.conversation
            break
        if node.parent in seen:
            break
        span = node.parent
    for visited in seen:
        memo[visited] = found
    return f"conversation {found}" if found else f"trace {tool.trace or '(none)'}"


def _sessions(index: _Index, file: str) -> Stream:
    yield from _capture_warnings(index, file)
    if not index.tools:
        yield warning(
            file,
            1,
            f"{index.spans} spans, none of them a tool call "
            "(gen_ai.operation.name = execute_tool, or openinference.span.kind = TOOL)",
            "no-tool-spans",
        )
        return
    memo: dict[str, str | None] = {}
    sessions: dict[str, list[_Tool]] = {}
    for tool in index.tools:
        sessions.setdefault(_session_of(tool, index.nodes, memo), []).append(tool)
    index.nodes.clear()
    ordered = sorted(sessions.items(), key=lambda item: min((t.start, t.order) for t in item[1]))
    for name, tools in ordered:
        tools.sort(key=lambda t: (t.start, t.order))
        yield from _session(name, tools, index.models, file)


def _session(name: str, tools: list[_Tool], models: dict[str, list[int]], file: str) -> Stream:
    """One session: a turn per trace (in order of its first call), a round per response."""
    ctx = Context(name, file, 0)
    turns: dict[str, list[_Tool]] = {}
    for tool in tools:
        turns.setdefault(tool.trace, []).append(tool)
    for trace, calls in turns.items():
        ctx.line = calls[0].line
        yield ctx.user("")
        starts = sorted(models.get(trace, ()))
        round_: list[_Tool] = []
        for tool in calls:
            if round_ and not _same_round(round_[-1], tool, starts):
                yield from _round(round_, ctx)
                round_ = []
            round_.append(tool)
        yield from _round(round_, ctx)
    ctx.line = tools[-1].line
    yield ctx.end()


def _same_round(previous: _Tool, tool: _Tool, model_starts: list[int]) -> bool:
    """Same parent span, and no model call began between the two calls' starts."""
    if previous.parent != tool.parent:
        return False
    return not any(previous.start < start <= tool.start for start in model_starts)


def _round(calls: list[_Tool], ctx: Context) -> Stream:
    if not calls:
        return
    ctx.line = calls[0].line
    yield ctx.reply("", tuple(ToolCall(t.call_id, t.name, t.arguments) for t in calls))
    for t in calls:
        ctx.line = t.line
        content = t.error if t.failed else t.result if t.has_result else ""
        yield ctx.result(t.call_id, content, t.failed, t.name)


def _capture_warnings(index: _Index, file: str) -> Stream:
    """One warning per kind of content the trace did not capture."""
    total = len(index.tools)
    no_args = [t for t in index.tools if not t.has_arguments]
    no_results = [t for t in index.tools if not t.has_result and not t.failed]
    if no_args:
        yield warning(
            file,
            no_args[0].line,
            f"{len(no_args)} of {total} tool calls have no recorded arguments "
            "(gen_ai.tool.call.arguments / input.value not captured): they were checked "
            "by tool name alone",
            NOT_CAPTURED,
            hint="turn on content capture in the instrumentation (it is opt-in) and export "
            "the trace again",
        )
    if no_results:
        yield warning(
            file,
            no_results[0].line,
            f"{len(no_results)} of {total} tool calls have no recorded result "
            "(gen_ai.tool.call.result / output.value not captured): they were checked "
            "with an empty result",
            NOT_CAPTURED,
            hint="turn on content capture in the instrumentation (it is opt-in) and export "
            "the trace again",
        )
