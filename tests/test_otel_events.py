"""loopguard decisions on OpenTelemetry (the `otel` extra): `gen_ai.guardrail.result` events on
the current span and the `loopguard.decisions` counter, with the real SDK (in-memory span
exporter, in-memory metric reader).

The tracer provider is the test's own (spans started from it are current through the API's
context, which is all the plugin reads); the meter provider has to be the global one, so the
metric test swaps the API's globals for a fresh set and puts them back afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import metrics as otel_metrics
from opentelemetry.metrics import _internal as metrics_globals
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.util._once import Once

import loopguard
from loopguard.detection.plugins import OWN_DISTRIBUTION, find_plugins, load_registry
from loopguard.integrations import otel

SECRET = "/home/someone/secret-plan.txt"  # in the tool's arguments: must never reach the trace


@pytest.fixture(scope="module")
def traced() -> Iterator[tuple[Any, InMemorySpanExporter]]:
    """A tracer whose finished spans land in memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("tests"), exporter
    provider.shutdown()


@pytest.fixture
def spans(traced: tuple[Any, InMemorySpanExporter]) -> Iterator[tuple[Any, InMemorySpanExporter]]:
    tracer, exporter = traced
    exporter.clear()
    yield tracer, exporter
    exporter.clear()


@pytest.fixture
def reader(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryMetricReader]:
    """A global meter provider reading into memory, for this test only."""
    monkeypatch.setattr(metrics_globals, "_METER_PROVIDER", None)
    monkeypatch.setattr(metrics_globals, "_METER_PROVIDER_SET_ONCE", Once())
    monkeypatch.setattr(
        metrics_globals, "_PROXY_METER_PROVIDER", metrics_globals._ProxyMeterProvider()
    )
    monkeypatch.setattr(otel, "_counter", None)
    monkeypatch.setattr(otel, "_counter_module", None)
    memory = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[memory])
    otel_metrics.set_meter_provider(provider)
    yield memory
    provider.shutdown()


def loop(session: loopguard.Session, times: int = 5) -> list[str]:
    """The same read, with the same result, `times` times: the default rules block it."""
    actions = []
    for i in range(times):
        decision = session.before_call("read_file", {"path": SECRET}, call_id=f"c{i}")
        session.after_call("read_file", {"path": SECRET}, result="same text", call_id=f"c{i}")
        actions.append(decision.action)
    return actions


def guardrail_events(exporter: InMemorySpanExporter) -> list[dict[str, Any]]:
    return [
        dict(event.attributes or {})
        for span in exporter.get_finished_spans()
        for event in span.events
        if event.name == "gen_ai.guardrail.result"
    ]


def test_the_plugin_is_found_through_its_entry_point_with_the_extra_installed() -> None:
    found = [p for p in find_plugins() if p.package == OWN_DISTRIBUTION and not p.builtin]
    assert [(p.name, p.value) for p in found] == [("otel", "loopguard.integrations.otel")]
    assert "otel" not in [p.name for p in find_plugins(blocked=["otel"])]
    registry = load_registry()
    assert "loopguard-engine[otel]" in {loaded.plugin.source for loaded in registry.plugins}
    assert registry.faults == ()


def test_without_the_extra_the_plugin_is_not_found(monkeypatch: pytest.MonkeyPatch) -> None:
    import loopguard.detection.plugins as discovery

    monkeypatch.setitem(discovery.OPTIONAL_PLUGINS, "otel", "lgfake-not-installed")
    assert "otel" not in [p.name for p in find_plugins()]


def test_a_loop_inside_a_span_puts_guardrail_events_on_it(spans: Any, tmp_path: Path) -> None:
    tracer, exporter = spans
    rules = tmp_path / "rules.yaml"
    rules.write_text("version: 1\n", encoding="utf-8")
    session = loopguard.Guard.from_file(rules).session("s1")
    with tracer.start_as_current_span("execute_tool read_file"):
        actions = loop(session)
    assert actions == ["allow", "allow", "critical", "breaker", "breaker"]
    events = guardrail_events(exporter)
    assert [e["gen_ai.guardrail.result.value"] for e in events] == [
        "critical",
        "breaker",
        "breaker",
    ]
    first = events[0]
    assert first == {
        "gen_ai.guardrail.component.name": "loopguard",
        "gen_ai.guardrail.policy.id": str(rules),
        "gen_ai.guardrail.policy.rule.id": "doom_loop_exact",
        "gen_ai.guardrail.result.type": "action",
        "gen_ai.guardrail.result.value": "critical",
        "gen_ai.guardrail.result.reason": "tool-call loop: the call was blocked",
        "gen_ai.guardrail.source": "tool_input",
        "gen_ai.tool.name": "read_file",
        "gen_ai.tool.call.id": "c2",
        "loopguard.call.seq": 3,
        "loopguard.count": 3,
        "loopguard.escalated": False,
    }
    assert events[1]["gen_ai.guardrail.result.reason"] == (
        "tool-call loop: the call was blocked and tools were closed for the turn "
        "(a repeated block, escalated)"
    )
    # low cardinality: the reasons are templates, and nothing of the tool's text is there
    assert len({e["gen_ai.guardrail.result.reason"] for e in events}) == 2
    assert SECRET not in json.dumps(events) and "same text" not in json.dumps(events)


def test_a_warning_is_an_event_too(spans: Any) -> None:
    tracer, exporter = spans
    guard = loopguard.Guard.from_yaml(
        "version: 1\n"
        "loop_detection: {enabled: true, warning_threshold: 2, critical_threshold: 9}\n"
        "detectors: {doom_loop_exact: {enabled: false}}\n",
        name="team-rules.yaml",
    )
    with tracer.start_as_current_span("agent"):
        actions = loop(guard.session("s2"), 3)
    assert "warn" in actions
    events = guardrail_events(exporter)
    assert len(events) == actions.count("warn")
    assert {e["gen_ai.guardrail.result.value"] for e in events} == {"warn"}
    assert {e["gen_ai.guardrail.policy.id"] for e in events} == {"team-rules.yaml"}
    assert events[0]["gen_ai.guardrail.result.reason"] == (
        "repeated tool calls: the call ran and the model was warned"
    )


def test_a_bundled_pack_is_the_policy_id(spans: Any) -> None:
    tracer, exporter = spans
    with tracer.start_as_current_span("agent"):
        loop(loopguard.Guard.from_file("builtin:portfolio").session("s6"), 3)
    assert {e["gen_ai.guardrail.policy.id"] for e in guardrail_events(exporter)} == {
        "builtin:portfolio"
    }


def test_allow_decisions_add_nothing(spans: Any) -> None:
    tracer, exporter = spans
    session = loopguard.Guard.default().session("s3")
    with tracer.start_as_current_span("agent"):
        for i in range(6):
            assert session.before_call("read_file", {"path": f"f{i}"}).action == "allow"
            session.after_call("read_file", {"path": f"f{i}"}, result=f"text {i}")
    (span,) = exporter.get_finished_spans()
    assert span.events == ()


def test_a_span_that_is_not_recorded_gets_nothing_and_costs_no_error(spans: Any) -> None:
    _, exporter = spans
    # An exporter of its own: shutting this provider down shuts its exporters down, and the
    # module's shared one must keep taking spans for the tests that run after this one.
    own = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(own))
    with provider.get_tracer("tests").start_as_current_span("sampled out") as span:
        assert not span.is_recording()
        assert loop(loopguard.Guard.default().session("s4"))[-1] == "breaker"
    assert own.get_finished_spans() == () and exporter.get_finished_spans() == ()
    provider.shutdown()


def test_decisions_are_counted_by_action_and_detector(reader: InMemoryMetricReader) -> None:
    loop(loopguard.Guard.default().session("s5"))  # no span at all: the counter still counts
    data = reader.get_metrics_data()
    points = {
        (
            point.attributes["gen_ai.guardrail.result.value"],
            point.attributes["gen_ai.guardrail.policy.rule.id"],
        ): point.value
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        if scope.scope.name == "loopguard"
        for metric in scope.metrics
        if metric.name == "loopguard.decisions"
        for point in metric.data.data_points
    }
    assert points == {("critical", "doom_loop_exact"): 1, ("breaker", "doom_loop_exact"): 2}
    (metric,) = [
        m
        for r in data.resource_metrics
        for s in r.scope_metrics
        for m in s.metrics
        if m.name == "loopguard.decisions"
    ]
    assert metric.unit == "{decision}" and metric.data.is_monotonic


@pytest.mark.slow
def test_import_loopguard_and_guarding_do_not_import_opentelemetry() -> None:
    """The extra's absence costs nothing, and its presence costs nothing until a host uses
    OpenTelemetry: neither importing loopguard nor a loop decision imports it."""
    code = (
        "import sys\n"
        "import loopguard\n"
        "assert not [m for m in sys.modules if m.startswith('opentelemetry')], 'import'\n"
        "session = loopguard.Guard.default().session('s')\n"
        "for i in range(4):\n"
        "    session.before_call('read', {'p': 1}, call_id=str(i))\n"
        "    session.after_call('read', {'p': 1}, result='same', call_id=str(i))\n"
        "assert session.tools_closed\n"
        "from loopguard.detection.plugins import load_registry\n"
        "assert 'loopguard-engine[otel]' in {p.plugin.source for p in load_registry().plugins}\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
