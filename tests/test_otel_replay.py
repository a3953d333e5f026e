"""`loopguard replay` on OpenTelemetry traces: OTLP JSON (GenAI and OpenInference attributes)
and the Python SDK's span JSON.

tests/otlp_samples/ holds traces written for these tests: a GenAI loop (one indented document,
the conversation id only on the root span, written last), a healthy GenAI collector file
(one export request per line, two traces of one conversation and one without), a GenAI trace
without captured content, an OpenInference loop and an OpenInference trace without content.
The SDK tests write their trace with the real SDK (`ConsoleSpanExporter`), the pydantic-ai one
with pydantic-ai's own instrumentation.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode

import loopguard
from loopguard.cli import main
from loopguard.replay.transcripts import FORMATS, AssistantMessage, ToolResult, open_transcript

SAMPLES = Path(__file__).resolve().parent / "otlp_samples"
LOOP = SAMPLES / "genai-loop.otlp.json"
HEALTHY = SAMPLES / "genai-healthy.otlp.jsonl"
DARK = SAMPLES / "genai-no-content.otlp.jsonl"
OI_LOOP = SAMPLES / "openinference-loop.otlp.json"
OI_DARK = SAMPLES / "openinference-no-content.otlp.jsonl"


def replay(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, Any]]]:
    code = main(["replay", "--format", "json", *args])
    out = capsys.readouterr().out
    return code, [json.loads(line) for line in out.splitlines()]


def records(lines: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [line for line in lines if line["record"] == kind]


def summary(lines: list[dict[str, Any]]) -> dict[str, Any]:
    (found,) = records(lines, "summary")
    return found


def decisions(lines: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(d["tool"], d["action"], d["detector"]) for d in records(lines, "decision")]


def test_every_sample_is_detected_as_otlp() -> None:
    assert "otlp" in FORMATS
    for path in (LOOP, HEALTHY, DARK, OI_LOOP, OI_DARK):
        transcript = open_transcript(str(path))
        assert transcript.format == "otlp", path.name
        assert transcript.label == "OpenTelemetry trace (OTLP JSON)"
    assert open_transcript(str(LOOP)).layout == "document"
    assert open_transcript(str(HEALTHY)).layout == "jsonl"


def test_a_genai_loop_is_caught(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = replay(capsys, "--fail-on", "critical", str(LOOP))
    assert code == 1
    (session,) = records(lines, "session")
    assert session["session"] == "conversation conv-loop-1"  # from the root span, read last
    assert (session["turns"], session["calls"]) == (1, 7)
    assert session["actions"] == {"allow": 5, "warn": 0, "critical": 1, "breaker": 1}
    assert decisions(lines) == [
        ("read_file", "critical", "doom_loop_exact"),
        ("read_file", "breaker", "doom_loop_exact"),
    ]
    assert [d["call_id"] for d in records(lines, "decision")] == ["call_r2", "call_r3"]
    assert summary(lines)["input_warnings"] == 0


def test_genai_calls_become_rounds_results_and_failures() -> None:
    events = list(open_transcript(str(LOOP)).events())
    rounds = [e for e in events if isinstance(e, AssistantMessage)]
    # the two list_dir calls began with no model call between them: one response
    assert [[c.name for c in r.tool_calls] for r in rounds] == [
        ["list_dir", "list_dir"],
        ["run_tests"],
        ["read_file"],
        ["read_file"],
        ["read_file"],
        ["read_file"],
    ]
    assert rounds[0].tool_calls[0].arguments == {"path": "."}
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    assert results["call_3"].is_error and results["call_3"].content == "1 test failed: test_app"
    assert results["call_1"].content == ["src", "tests"] and not results["call_1"].is_error


def test_a_healthy_collector_file_passes(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = replay(capsys, "--fail-on", "warn", str(HEALTHY))
    assert code == 0 and records(lines, "decision") == []
    sessions = {s["session"]: (s["turns"], s["calls"]) for s in records(lines, "session")}
    assert sessions == {
        "conversation conv-ok": (2, 5),  # two traces of one conversation: two turns
        "trace 2cf7651916cd43dd8448eb211c80319e": (1, 1),  # no conversation id: the trace
    }
    assert summary(lines)["input_warnings"] == 0
    events = list(open_transcript(str(HEALTHY)).events())
    rounds = [[c.id for c in e.tool_calls] for e in events if isinstance(e, AssistantMessage)]
    assert ["s4", "s5"] in rounds  # the same parent (the step span), no model call between
    (kv_call,) = [
        c for e in events if isinstance(e, AssistantMessage) for c in e.tool_calls if c.id == "s4"
    ]
    assert kv_call.arguments == {"id": "doc-7"}  # structured (kvlistValue) arguments


def test_a_trace_without_captured_content_warns_and_fails_the_gate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, lines = replay(capsys, str(DARK))
    assert code == 0
    warnings = records(lines, "warning")
    assert [(w["code"], w["drops_data"]) for w in warnings] == [
        ("content-not-captured", True),
        ("content-not-captured", True),
    ]
    assert "4 of 4 tool calls have no recorded arguments" in warnings[0]["message"]
    assert "4 of 4 tool calls have no recorded result" in warnings[1]["message"]
    # detection still runs on what is there: the same tool, four times, by name alone
    assert decisions(lines) == [
        ("read_file", "critical", "doom_loop_exact"),
        ("read_file", "breaker", "doom_loop_exact"),
    ]


def test_an_openinference_loop_is_caught(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = replay(capsys, "--fail-on", "breaker", str(OI_LOOP))
    assert code == 1
    (session,) = records(lines, "session")
    assert session["session"] == "trace 4ef7651916cd43dd8448eb211c8031a0"
    assert session["calls"] == 5
    assert session["actions"] == {"allow": 3, "warn": 0, "critical": 1, "breaker": 1}
    assert decisions(lines) == [
        ("search_products", "critical", "doom_loop_exact"),
        ("search_products", "breaker", "doom_loop_exact"),
    ]
    results = {
        e.call_id: e for e in open_transcript(str(OI_LOOP)).events() if isinstance(e, ToolResult)
    }
    assert results["t1"].is_error and results["t1"].content == "timed out after 30 s"
    assert results["t2"].content == {"items": ["sku-1", "sku-2"]}


def test_openinference_without_content_passes_but_fails_the_gate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, lines = replay(capsys, str(OI_DARK))
    assert code == 0 and records(lines, "decision") == []
    (session,) = records(lines, "session")
    assert (session["session"], session["calls"]) == ("conversation sess-42", 2)
    assert summary(lines)["input_warnings_dropping_data"] == 2
    code, _ = replay(capsys, "--fail-on", "breaker", str(OI_DARK))
    assert code == 1  # nothing reached breaker, but part of the input was never there


def test_the_input_format_can_be_forced(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = replay(capsys, "--input-format", "otlp", str(HEALTHY))
    assert code == 0 and summary(lines)["calls"] == 6


def test_bad_elements_and_traces_without_tool_spans(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    mixed = tmp_path / "mixed.otlp.jsonl"
    mixed.write_text(HEALTHY.read_text(encoding="utf-8") + '{"hello": "world"}\n', encoding="utf-8")
    code, lines = replay(capsys, "--input-format", "otlp", "--fail-on", "breaker", str(mixed))
    assert code == 1
    assert [(w["code"], w["line"]) for w in records(lines, "warning")] == [("bad-message", 6)]
    assert summary(lines)["calls"] == 6
    no_tools = tmp_path / "chat-only.otlp.json"
    no_tools.write_text(
        json.dumps(
            {
                "resourceSpans": [
                    {
                        "scopeSpans": [
                            {
                                "spans": [
                                    {
                                        "traceId": "ab",
                                        "spanId": "cd",
                                        "name": "chat",
                                        "startTimeUnixNano": "1",
                                        "attributes": [
                                            {
                                                "key": "gen_ai.operation.name",
                                                "value": {"stringValue": "chat"},
                                            }
                                        ],
                                    }
                                ]
                            }
                        ]
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    code, lines = replay(capsys, str(no_tools))
    assert code == 2
    assert [w["code"] for w in records(lines, "warning")] == ["no-tool-spans"]
    assert [e["code"] for e in records(lines, "error")] == ["no-tool-calls"]
    empty = tmp_path / "empty.otlp.json"
    empty.write_text('{"resourceSpans": []}\n', encoding="utf-8")
    code, lines = replay(capsys, "--input-format", "otlp", str(empty))
    assert code == 2 and records(lines, "error")[0]["message"] == "no spans found"


# -- traces the real SDK wrote -------------------------------------------------------------
def write_sdk_trace(path: Path, formatter: Callable[[Any], str] | None) -> list[str]:
    """A loop run inside GenAI `execute_tool` spans, loopguard deciding inside each one, the
    spans printed by the SDK's ConsoleSpanExporter. Returns the actions loopguard took."""
    with path.open("w", encoding="utf-8") as out:
        exporter = ConsoleSpanExporter(out=out, **({"formatter": formatter} if formatter else {}))
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("agent")
        session = loopguard.Guard.default().session("live")
        actions = []
        root_attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "c-9"}
        with tracer.start_as_current_span("invoke_agent coder", attributes=root_attrs):
            for i in range(4):
                with tracer.start_as_current_span(
                    "chat", attributes={"gen_ai.operation.name": "chat"}
                ):
                    pass
                args = {"cmd": "pytest -x"}
                attributes = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "shell",
                    "gen_ai.tool.call.id": f"k{i}",
                    "gen_ai.tool.call.arguments": json.dumps(args),
                }
                with tracer.start_as_current_span(
                    "execute_tool shell", attributes=attributes
                ) as span:
                    decision = session.before_call("shell", args, call_id=f"k{i}")
                    actions.append(decision.action)
                    session.after_call("shell", args, error="exit 1: 3 failed", call_id=f"k{i}")
                    span.set_status(Status(StatusCode.ERROR, "exit 1: 3 failed"))
        provider.shutdown()
    return actions


@pytest.mark.parametrize("lines", [True, False], ids=["one span per line", "indented spans"])
def test_a_trace_the_python_sdk_printed_replays_to_the_same_decisions(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, lines: bool
) -> None:
    path = tmp_path / "spans.json"
    actions = write_sdk_trace(
        path, (lambda span: span.to_json(indent=None) + "\n") if lines else None
    )
    live = [a for a in actions if a != "allow"]
    assert live  # the guard decided something while the agent ran
    text = path.read_text(encoding="utf-8")
    assert text.count('"gen_ai.guardrail.result"') == len(live)  # the events are on the spans
    assert open_transcript(str(path)).format == "otlp"
    code, out = replay(capsys, str(path))
    assert code == 0
    (session,) = records(out, "session")
    assert (session["session"], session["calls"]) == ("conversation c-9", 4)
    assert [d["action"] for d in records(out, "decision")] == live


def test_a_pydantic_ai_run_traced_by_its_own_instrumentation_replays(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pytest.importorskip("pydantic_ai", reason="pydantic-ai needs Python 3.11+")
    from pydantic_ai import Agent
    from pydantic_ai.capabilities.instrumentation import Instrumentation
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    responses = iter(range(5))

    def model(_messages: Any, _info: Any) -> ModelResponse:
        if next(responses) == 4:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(
            parts=[ToolCallPart("lookup", {"key": "a"}), ToolCallPart("lookup", {"key": "b"})]
        )

    buffer = io.StringIO()
    provider = TracerProvider()
    provider.add_span_processor(
        SimpleSpanProcessor(
            ConsoleSpanExporter(out=buffer, formatter=lambda span: span.to_json(indent=None) + "\n")
        )
    )
    settings = InstrumentationSettings(tracer_provider=provider, include_content=True)
    agent = Agent(FunctionModel(model), capabilities=[Instrumentation(settings)])

    @agent.tool_plain
    def lookup(key: str) -> str:
        return "no change"

    # `run_sync` would leave pydantic-graph's event loop open for a later test to collect.
    asyncio.run(agent.run("look both up until they change"))
    provider.shutdown()
    path = tmp_path / "pydantic-ai.jsonl"
    path.write_text(buffer.getvalue(), encoding="utf-8")
    events = list(open_transcript(str(path)).events())
    rounds = [
        [c.arguments for c in e.tool_calls] for e in events if isinstance(e, AssistantMessage)
    ]
    assert rounds == [[{"key": "a"}, {"key": "b"}]] * 4  # one round per model response
    code, out = replay(capsys, "--fail-on", "critical", str(path))
    assert code == 1 and summary(out)["calls"] == 8 and summary(out)["input_warnings"] == 0
    assert {d["action"] for d in records(out, "decision")} >= {"critical", "breaker"}


def test_the_observability_walk_through_runs_as_documented(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/observability.md: the pydantic-ai example, its events, and its replay output."""
    pytest.importorskip("pydantic_ai", reason="pydantic-ai needs Python 3.11+")
    doc = (Path(__file__).resolve().parents[1] / "docs" / "observability.md").read_text("utf-8")
    (code,) = re.findall(r"```python\n(.*?)```", doc, re.DOTALL)
    monkeypatch.chdir(tmp_path)
    loop = asyncio.new_event_loop()  # the example's `run_sync` runs in it; closed after
    asyncio.set_event_loop(loop)
    try:
        exec(compile(code, "docs/observability.md", "exec"), {"__name__": "walk_through"})
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    printed = capsys.readouterr().out
    assert printed.startswith("[loopguard] Stopped: search_docs was called 3 times")
    trace_text = (tmp_path / "agent-trace.jsonl").read_text(encoding="utf-8")
    spans = [json.loads(line) for line in trace_text.splitlines()]
    events = [
        (span["name"], event["attributes"]["gen_ai.guardrail.result.value"])
        for span in spans
        for event in span["events"]
        if event["name"] == "gen_ai.guardrail.result"
    ]
    assert events == [("chat function:model:", "critical"), ("chat function:model:", "breaker")]
    shown = re.search(r"\$ loopguard replay agent-trace.jsonl\n(.*?)```", doc, re.DOTALL)
    assert shown is not None
    assert main(["replay", "agent-trace.jsonl"]) == 0
    out = capsys.readouterr().out.splitlines()
    session = re.compile(r"conversation [0-9a-f-]{36}")
    for line in shown.group(1).splitlines():
        if "[...]" in line:
            line = line.split("[...]")[0].rstrip()
            assert any(got.startswith(line) for got in out), line
        else:
            assert session.sub("conversation ID", line) in [
                session.sub("conversation ID", got) for got in out
            ], line


def test_the_sdk_otlp_encoder_output_replays(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The SDK's own OTLP encoding, as JSON (protobuf's JSON mapping: base64 ids, int64 values
    as text, status codes by enum name)."""
    encoder = pytest.importorskip("opentelemetry.exporter.otlp.proto.common.trace_encoder")
    json_format = pytest.importorskip("google.protobuf.json_format")
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent")
    with tracer.start_as_current_span("invoke_agent", attributes={"gen_ai.conversation.id": "z1"}):
        for i in range(4):
            with tracer.start_as_current_span("chat", attributes={"gen_ai.operation.name": "chat"}):
                pass
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "deploy",
                "gen_ai.tool.call.id": f"d{i}",
                "gen_ai.tool.call.arguments": '{"env": "prod"}',
            }
            with tracer.start_as_current_span("execute_tool deploy", attributes=attributes) as span:
                span.set_status(Status(StatusCode.ERROR, "quota exceeded"))
    provider.shutdown()
    path = tmp_path / "trace.json"
    path.write_text(
        json_format.MessageToJson(encoder.encode_spans(exporter.get_finished_spans())),
        encoding="utf-8",
    )
    assert '"STATUS_CODE_ERROR"' in path.read_text(encoding="utf-8")
    assert open_transcript(str(path)).format == "otlp"
    results = [e for e in open_transcript(str(path)).events() if isinstance(e, ToolResult)]
    assert [(r.is_error, r.content) for r in results] == [(True, "quota exceeded")] * 4
    code, out = replay(capsys, "--fail-on", "critical", str(path))
    assert code == 1
    (session,) = records(out, "session")
    assert (session["session"], session["calls"]) == ("conversation z1", 4)
    assert [d["action"] for d in records(out, "decision")] == ["critical", "breaker"]
