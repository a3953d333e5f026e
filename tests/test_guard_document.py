"""A `Guard` takes the `RulesDocument` the loader produced and never validates it again.

Validation is counted at its lowest level: every JSON Schema check of a rules layer goes
through the strict validator's `iter_errors`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import loopguard
from loopguard.config.layers import load
from loopguard.config.schema import StrictValidator
from loopguard.config.source import RulesDocument

RULES = (
    "version: 1\nturn: {max_tool_rounds: 7}\n"
    "agents:\n  night: {turn: {max_tool_rounds: 3}, loop_detection: {warning_threshold: 4}}\n"
)


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per schema validation run from now on."""
    seen: list[int] = []
    real = StrictValidator.iter_errors

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(StrictValidator, "iter_errors", counting)
    return seen


def test_loading_validates_and_the_guard_built_from_it_does_not(validations: list[int]) -> None:
    document = load(RULES, "text", "team.yaml")
    loaded = len(validations)
    assert loaded >= 2  # builtin:default and team.yaml, each checked by the loader
    guard = loopguard.Guard(document)
    for agent in (None, "night", "unknown"):
        session = guard.session("s", agent=agent)
        session.begin_turn([{"role": "user", "content": "hi"}])
        assert session.before_call("read", {"path": "a"}).action == "allow"
    assert len(validations) == loaded  # sessions and per-agent policies: no validation
    assert guard.document is document.data and guard.source == "team.yaml"
    assert guard.session("s", agent="night").config["turn"]["max_tool_rounds"] == 3
    assert guard.session("s").config["turn"]["max_tool_rounds"] == 7


def test_the_constructors_validate_once(validations: list[int], tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(RULES, encoding="utf-8")
    load(path)
    once = len(validations)
    validations.clear()
    guard = loopguard.Guard.from_file(path)
    guard.session("s", agent="night").before_call("read", {})
    assert len(validations) == once and guard.source == str(path)


def test_one_loaded_document_serves_several_guards(validations: list[int]) -> None:
    document = load(RULES, "text", "team.yaml")
    validations.clear()
    stores = [loopguard.MemoryStore(), loopguard.MemoryStore()]
    guards = [loopguard.Guard(document, store=store, source="shared") for store in stores]
    for guard in guards:
        guard.session("s", agent="night").before_call("read", {})
    assert validations == [] and {g.source for g in guards} == {"shared"}


def test_only_the_loader_makes_a_rules_document() -> None:
    assert isinstance(load("version: 1\n", "text"), RulesDocument)
    with pytest.raises(loopguard.RulesError):
        load("version: 1\nturn: {max_tool_rounds: many}\n", "text")
