"""Schema assembly: the core schema plus each detector's options schema."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from types import SimpleNamespace
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from loopguard.config.layers import analyze
from loopguard.config.schema import assemble, core_schema, schema_findings
from loopguard.config.source import SourceDoc
from loopguard.detection.detector import Detector
from loopguard.detection.plugins import PluginFault, Registered, detector_problem


@dataclass
class FakeDetector:
    id: str
    options_schema: Any = field(default_factory=lambda: {"type": "object"})
    source: str = "fake[entry]"
    levels: tuple[str, ...] = ("warn",)


GOOD = FakeDetector(
    "slow_tool",
    {"type": "object", "properties": {"max_seconds": {"type": "integer", "minimum": 1}}},
)


def test_core_schema_is_valid_draft_2020_12_package_data() -> None:
    text = resources.files("loopguard.schemas").joinpath("rules.schema.json").read_text("utf-8")
    schema = json.loads(text)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert core_schema() == schema


def test_detector_options_are_placed_under_their_id_with_enabled() -> None:
    schema = assemble([GOOD]).schema
    Draft202012Validator.check_schema(schema)
    block = schema["properties"]["detectors"]
    assert block["additionalProperties"] is False
    options = block["properties"]["slow_tool"]
    assert options["properties"]["enabled"] == {
        "description": "Turn this detector on or off.",
        "type": "boolean",
    }
    assert options["properties"]["max_seconds"] == {"type": "integer", "minimum": 1}
    assert options["additionalProperties"] is False


def test_plugin_options_are_validated_like_builtins() -> None:
    schema = assemble([GOOD]).schema
    doc = SourceDoc(
        "r.yaml",
        {"version": 1, "detectors": {"slow_tool": {"max_seconds": 0, "max_secs": 3}, "other": {}}},
        positions={(): (1, 1)},
    )
    messages = sorted(f.message for f in schema_findings(doc, schema))
    assert messages == [
        "must be >= 1, got 0",
        "unknown detector 'other'",
        "unknown key 'max_secs' (did you mean 'max_seconds'?)",
    ]


def test_a_plugin_format_regex_option_is_compiled_like_loopguards_own_keyword() -> None:
    """`format: regex` (a plugin may write it instead of `x-loopguard-regex`) is compiled by the
    `regex` package; no other format is checked."""
    props = {"pattern": {"type": "string", "format": "regex"}, "mail": {"format": "email"}}
    schema = assemble([FakeDetector("fmt", {"type": "object", "properties": props})]).schema
    options = {"pattern": "(", "mail": "not an address"}
    doc = SourceDoc("r.yaml", {"version": 1, "detectors": {"fmt": options}}, positions={(): (1, 1)})
    found = [(f.path, f.code, f.message) for f in schema_findings(doc, schema)]
    message = "pattern does not compile: missing ) at position 1"
    assert found == [("detectors.fmt.pattern", "bad-regex", message)]


@pytest.mark.parametrize(
    "bad", [{"type": "no-such-type"}, {"properties": 5}, "not a mapping", {"minimum": "x"}]
)
def test_invalid_options_schema_is_refused_and_the_fault_reported(
    monkeypatch: pytest.MonkeyPatch, bad: Any
) -> None:
    """Registration refuses the schema (a fault, as tests/test_plugins.py shows for a whole
    plugin); assembly takes the registry's detectors as they are, its faults as problems."""
    import loopguard.config.schema as schema_module

    broken = type("Broken", (Detector,), {"id": "broken", "options_schema": bad})()
    problem = detector_problem(broken, set())
    assert problem and problem.startswith("detector 'broken': ") and "options schema" in problem
    fault = PluginFault("pkg[broken]", "schema", problem)
    registry = SimpleNamespace(entries=(Registered(GOOD, "pkg[good]", False),), faults=(fault,))
    monkeypatch.setattr(schema_module, "load_registry", lambda: registry)
    assembly = assemble()
    assert assembly.detector_ids == ("slow_tool",)
    [shown] = assembly.problems
    assert "broken" in shown and "pkg[broken]" in shown
    assert "broken" not in assembly.schema["properties"]["detectors"]["properties"]


def test_detector_without_options_gets_just_enabled() -> None:
    """(A second detector with the same id is refused at registration: tests/test_plugins.py,
    `duplicate-id`.)"""
    assembly = assemble([FakeDetector("plain")])
    options = assembly.schema["properties"]["detectors"]["properties"]["plain"]
    assert options["properties"] == {
        "enabled": {"description": "Turn this detector on or off.", "type": "boolean"}
    }
    assert assembly.problems == ()


def test_assembly_does_not_mutate_the_detector_schema() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "string"}}}
    assemble([FakeDetector("d", schema)])
    assert schema == {"type": "object", "properties": {"x": {"type": "string"}}}


def test_default_assembly_holds_the_installed_detectors() -> None:
    schema = assemble().schema
    ids = set(schema["properties"]["detectors"]["properties"])
    assert {"generic_repeat", "doom_loop_exact", "doom_loop_fuzzy"} <= ids


def test_without_a_registry_the_core_schema_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    import loopguard.config.schema as schema_module

    def broken() -> None:
        raise RuntimeError("no registry")

    monkeypatch.setattr(schema_module, "load_registry", broken)
    assembly = assemble()
    assert not assembly.closed
    assert assembly.problems == ("detector registry failed to load: RuntimeError: no registry",)
    assert assembly.schema == core_schema()
    result = analyze(
        "version: 1\ndetectors:\n  anything: {enabled: 3}\n", "text", "o.yaml", assembly=assembly
    )
    assert [(f.line, f.col, f.code) for f in result.errors] == [(3, 23, "type")]


def test_a_fake_registry_is_used_when_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    assembly = assemble([GOOD])
    result = analyze(
        "version: 1\ndetectors:\n  slow_tool: {max_seconds: 'x'}\n",
        "text",
        "p.yaml",
        assembly=assembly,
    )
    mine = [(f.line, f.col, f.code) for f in result.errors if f.file == "p.yaml"]
    assert mine == [(3, 28, "type")]
    # the built-in detectors are unknown to this fake registry, so default.yaml's are errors too
    assert any(f.file == "builtin:default" for f in result.errors)


def test_every_detector_option_of_default_rules_validates() -> None:
    result = analyze("version: 1\n", "text", "ok.yaml")
    assert result.errors == []


def test_an_abandoned_violation_walk_leaves_no_pattern_budget_behind() -> None:
    """The pattern budget is one document's: a walk that is not read to its end must not keep it
    set, or later documents would match under an expired budget (seen as 'could not be checked
    against the pattern in time' on a loaded machine)."""
    from loopguard.config import schema as config_schema

    rules = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "additionalProperties": False,
    }
    walk = config_schema._violations({"a": "x", "b": 1}, rules)
    assert next(walk)
    assert config_schema._DEADLINE.get() is None
    walk.close()


def test_the_schemas_condition_keys_are_the_combinators_and_the_condition_leaves() -> None:
    """The schema's `condition` and the turn policy and lint (`rules.CONDITION_LEAVES`) name the
    same operators, and its description lists them all."""
    from loopguard.rules import CONDITION_LEAVES

    condition = core_schema()["$defs"]["condition"]
    assert set(condition["properties"]) == {"all", "any", "not", *CONDITION_LEAVES}
    for op in ("all", "any", "not", *CONDITION_LEAVES):
        assert op in condition["description"]
