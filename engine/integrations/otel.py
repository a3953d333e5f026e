"""loopguard decisions on OpenTelemetry traces and metrics (`pip install loopguard-engine[otel]`).

A `loopguard_on_decision` plugin, found through this distribution's entry point `otel` only
when the extra is installed. For every non-allow decision it

- adds a `gen_ai.guardrail.result` event (GenAI semantic conventions, guardrails) to the
  span that is current when loopguard decides, normally the framework's `execute_tool`
  span: component `loopguard`, policy id the rules' source, rule id the deciding detector,
  result type `action` and value `warn` / `critical` / `breaker`, a reason from a fixed
  template (never the tool's arguments, result or the detector's message);
- adds 1 to the counter `loopguard.decisions`, by action and detector.

It never imports OpenTelemetry itself: a process where nothing imported the API has no span
to annotate and no meter provider, so the plugin answers from `sys.modules` at the cost of
a dictionary lookup; with the API imported but no provider set, the current span is not
recording and the counter is the API's no-op proxy. See docs/observability.md.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from loopguard.decision import Decision
from loopguard.detection.hookspecs import hookimpl

EVENT = "gen_ai.guardrail.result"
COMPONENT = "loopguard"
RESULT_TYPE = "action"
METER = "loopguard"
COUNTER = "loopguard.decisions"
COUNTER_UNIT = "{decision}"
_SOURCES = {"before": "tool_input", "after": "tool_output"}
_REASONS = {
    "warn": "repeated tool calls: the call ran and the model was warned",
    "critical": "tool-call loop: the call was blocked",
    "breaker": "tool-call loop: the call was blocked and tools were closed for the turn",
}
_NAME_MAX = 128  # identifiers (detector, code) longer than this are cut: they are labels

_METRIC_KEYS_MAX = 1024  # (action, detector) pairs whose attributes are kept made

_lock = threading.Lock()
_metric_attributes: dict[tuple[str, str | None], dict[str, str]] = {}
_counter: Any = None
_counter_module: Any = None  # the `opentelemetry.metrics` module the counter came from


def reason(decision: Decision) -> str:
    """The low-cardinality reason: a fixed phrase per action, and the vote's code if any."""
    text = _REASONS.get(decision.action, "loop decision")
    if decision.escalated:
        text += " (a repeated block, escalated)"
    top = decision.top
    code = top.code if top is not None else ""
    if code:
        text += f" [{_label(code)}]"
    return text


def event_attributes(decision: Decision, rules_source: str) -> dict[str, Any]:
    """The `gen_ai.guardrail.result` event's attributes for one decision."""
    attributes: dict[str, Any] = {
        "gen_ai.guardrail.component.name": COMPONENT,
        "gen_ai.guardrail.policy.id": str(rules_source),
        "gen_ai.guardrail.result.type": RESULT_TYPE,
        "gen_ai.guardrail.result.value": decision.action,
        "gen_ai.guardrail.result.reason": reason(decision),
        "gen_ai.guardrail.source": _SOURCES.get(decision.phase, "tool_input"),
    }
    if decision.detector:
        attributes["gen_ai.guardrail.policy.rule.id"] = _label(decision.detector)
    if decision.tool:
        attributes["gen_ai.tool.name"] = decision.tool
    if decision.call_id is not None:
        attributes["gen_ai.tool.call.id"] = str(decision.call_id)
    top = decision.top
    attributes["loopguard.call.seq"] = int(decision.seq)
    attributes["loopguard.count"] = int(top.count) if top is not None else 0
    attributes["loopguard.escalated"] = bool(decision.escalated)
    return attributes


def metric_attributes(decision: Decision) -> dict[str, str]:
    """The counter's attributes: the action and the detector, both low-cardinality (so each
    pair's dict is made once; nothing the SDK does with it changes it)."""
    key = (decision.action, decision.detector)
    found = _metric_attributes.get(key)
    if found is None:
        found = {
            "gen_ai.guardrail.result.value": decision.action,
            "gen_ai.guardrail.policy.rule.id": _label(decision.detector or "none"),
        }
        if len(_metric_attributes) < _METRIC_KEYS_MAX:
            _metric_attributes[key] = found
    return found


@hookimpl
def loopguard_on_decision(session_id: str, decision: Decision, rules_source: str) -> None:
    """Put a non-allow decision on the current span and count it (see the module docstring)."""
    modules = sys.modules
    trace = modules.get("opentelemetry.trace")
    if trace is not None:
        span = trace.get_current_span()
        if span.is_recording():
            span.add_event(EVENT, event_attributes(decision, rules_source))
    metrics = modules.get("opentelemetry.metrics")
    if metrics is not None:
        _decision_counter(metrics).add(1, metric_attributes(decision))


def _decision_counter(metrics: Any) -> Any:
    """The counter, made once from the global meter provider (the API's proxy until one is
    set, which then forwards to it)."""
    global _counter, _counter_module
    counter = _counter
    if counter is not None and _counter_module is metrics:
        return counter
    with _lock:
        if _counter is None or _counter_module is not metrics:
            meter = metrics.get_meter(METER, _distribution_version())
            _counter = meter.create_counter(
                COUNTER,
                unit=COUNTER_UNIT,
                description="loopguard decisions that were not allow, by action and detector",
            )
            _counter_module = metrics
        return _counter


def _distribution_version() -> str | None:
    """The installed distribution's version, for the meter (None when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("loopguard-engine")
    except PackageNotFoundError:
        return None


def _label(value: str) -> str:
    """An identifier as a label: text, at most _NAME_MAX characters."""
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= _NAME_MAX else text[:_NAME_MAX]
