"""One lint pass: rejected values are left out, the rest is checked, follow-on findings are not."""

from __future__ import annotations

from loopguard.config.json5 import parse_text
from loopguard.config.schema import assemble, prune_invalid
from loopguard.config.source import SourceDoc
from loopguard.findings import Finding
from loopguard.lint.linter import lint_bytes


def codes(text: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in lint_bytes(text.encode()).findings]


def test_meaning_errors_are_found_next_to_schema_errors() -> None:
    text = (
        "version: 1\nturn: {max_tool_rouds: 3}\nintents:\n"
        "  - {id: a, when: {text_contains: nope}, require: {tool: t}}\n"
        "  - {id: a, when: {text_contains: nope}, require: {tool: 5}}\n"
    )
    assert codes(text) == [
        (2, "unknown-key"),
        (4, "undefined-set"),
        (5, "duplicate-id"),
        (5, "undefined-set"),
        (5, "type"),
    ]


def test_positions_follow_the_values_after_a_list_item_is_left_out() -> None:
    text = (
        "version: 1\nkeyword_sets: {k: [k]}\nintents:\n"
        "  - just a string\n"
        "  - {id: b, when: {text_contains: k}, require: {tool: t}}\n"
        "  - {id: b, when: {text_contains: k}, require: {tool: u}}\n"
    )
    found = lint_bytes(text.encode()).findings
    assert [(f.line, f.col, f.code) for f in found] == [(4, 5, "type"), (6, 10, "duplicate-id")]
    assert found[1].path == "intents.b.id"


def test_an_object_missing_a_required_key_is_still_checked() -> None:
    text = "version: 1\nintents:\n  - {id: a, when: {text_contains: nope}}\n"
    assert codes(text) == [(3, "required"), (3, "undefined-set")]


def test_a_set_used_only_by_a_rejected_intent_is_not_unused() -> None:
    text = (
        "version: 1\nkeyword_sets: {k: [k]}\nintents:\n"
        "  - {id: a, when: {text_contains: k, text_equals: k}, require: {tool: t}}\n"
    )
    assert codes(text) == [(4, "condition")]


def test_thresholds_are_not_judged_against_defaults_that_replace_a_rejected_number() -> None:
    text = (
        "version: 1\nloop_detection: {warning_threshold: 40, history_size: '50'}\n"
        "agents:\n  a: {loop_detection: {critical_threshold: 45}}\n"
    )
    assert codes(text) == [(2, "type")]


def test_an_unrelated_rejected_key_does_not_hide_threshold_findings() -> None:
    text = "version: 1\nloop_detection: {warning_threshold: 40, history_size: 30, typo: 1}\n"
    assert [c for _, c in codes(text)] == [  # one place: in check (module-name) order
        "never-fires",
        "threshold-repaired",
        "threshold-repaired",
        "unknown-key",
    ]


def test_threshold_order_of_two_valid_numbers_is_kept_beside_schema_errors() -> None:
    text = (
        "version: 1\nloop_detection: {warning_threshold: 9, critical_threshold: 5, "
        "history_size: x}\n"
    )
    assert [c for _, c in codes(text)] == ["threshold-order", "type"]


def test_prune_keeps_what_was_written_and_where() -> None:
    doc = parse_text("version: 1\nturn: {max_tool_rounds: x, context_messages: 2}\n", "r.yaml")
    pruned = prune_invalid(doc, assemble().schema)
    assert isinstance(pruned, SourceDoc) and pruned is not doc
    assert pruned.data == {"version": 1, "turn": {"context_messages": 2}}
    assert pruned.original["turn"]["max_tool_rounds"] == "x"
    assert pruned.removed == {("turn", "max_tool_rounds")}
    assert pruned.positions[("turn", "context_messages")] == (2, 46)


def test_prune_gives_up_when_the_root_goes() -> None:
    doc = SourceDoc("r.yaml", {"version": 1, "turn": 3}, {(): (1, 1)})
    assert prune_invalid(doc, {"type": "array"}) is None
    assert isinstance(Finding, type)
