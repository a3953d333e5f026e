"""Lint's meaning checks, one behaviour per test (through `loopguard.lint.linter`)."""

from __future__ import annotations

from pathlib import Path

from loopguard.cli.lint_cmd import exit_code, format_text
from loopguard.config.layers import analyze
from loopguard.config.schema import Assembly, core_schema
from loopguard.findings import Finding
from loopguard.lint.linter import report


def lint(text: str, agent: str | None = None) -> list[Finding]:
    return report(analyze(text, "text", "r.yaml"), agent).findings


def codes(text: str, agent: str | None = None) -> list[tuple[int, int, str, str]]:
    return [(f.line, f.col, f.level, f.code) for f in lint(text, agent)]


def test_ordering_in_one_agent_block_is_an_error_without_cascades() -> None:
    text = (
        "version: 1\nagents:\n  a:\n    loop_detection:\n      warning_threshold: 12\n"
        "      critical_threshold: 11\n"
    )
    assert codes(text) == [(6, 27, "error", "threshold-order")]


def test_warning_and_breaker_pair_is_checked_when_critical_is_not_written() -> None:
    text = (
        "version: 1\nloop_detection: {warning_threshold: 9, global_circuit_breaker_threshold: 9}\n"
    )
    found = lint(text)
    assert [f.code for f in found] == ["threshold-order"]
    assert (
        found[0].message == "global_circuit_breaker_threshold (9) must be greater than "
        "warning_threshold (9)"
    )


def test_repair_after_merging_a_layer_is_a_warning_in_the_linted_file(tmp_path: Path) -> None:
    (tmp_path / "strict.yaml").write_text(
        "version: 1\n"
        "loop_detection: {critical_threshold: 12, global_circuit_breaker_threshold: 13}\n",
        encoding="utf-8",
    )
    (tmp_path / "mine.yaml").write_text(
        "version: 1\nextends: [strict.yaml]\nloop_detection:\n  warning_threshold: 15\n",
        encoding="utf-8",
    )
    found = report(analyze(tmp_path / "mine.yaml")).findings
    assert [(f.line, f.col, f.code) for f in found] == [
        (4, 22, "threshold-repaired"),
        (4, 22, "threshold-repaired"),
    ]
    assert (
        "critical_threshold 12 is not above warning_threshold 15; it is raised to 16"
        in found[0].message
    )
    assert (
        "global_circuit_breaker_threshold 13 is not above critical_threshold 16; it is "
        "raised to 17" in found[1].message
    )
    assert all(f.file.endswith("mine.yaml") for f in found)


def test_an_agent_inheriting_a_global_repair_is_not_reported_twice() -> None:
    text = "version: 1\nloop_detection: {warning_threshold: 22}\nagents:\n  a: {}\n  b: {}\n"
    assert [f.code for f in lint(text)] == ["threshold-repaired"]


def test_doom_loop_threshold_above_window_in_an_agent() -> None:
    text = (
        "version: 1\nagents:\n  a:\n    detectors:\n"
        "      doom_loop_fuzzy: {window: 4, threshold: 5}\n"
    )
    found = lint(text)
    assert [(f.line, f.col, f.code) for f in found] == [(5, 47, "never-fires")]
    assert "for agent 'a'" in found[0].message


def test_unknown_tool_threshold_above_history_is_a_warning() -> None:
    text = "version: 1\nloop_detection: {unknown_tool_threshold: 31}\n"
    assert [(f.level, f.code) for f in lint(text)] == [("warning", "never-fires")]


def test_duplicate_intent_ids_and_order_entries() -> None:
    text = (
        "version: 1\naggregator:\n  order: [ping_pong, generic_repeat, ping_pong]\n"
        "intents:\n  - {id: a, when: {text_contains: plan_marker}, require: {tool: t}}\n"
        "  - {id: a, when: {text_contains: step_word}, require: {tool: t}}\n"
    )
    assert codes(text) == [
        (3, 38, "warning", "duplicate-detector"),
        (6, 10, "error", "duplicate-id"),
    ]


def test_sets_of_other_layers_are_not_reported_as_unused() -> None:
    text = "version: 1\nextends: [builtin:portfolio-en]\nintents: []\n"
    assert lint(text) == []


def test_sets_used_only_by_an_agent_count_as_used() -> None:
    text = (
        "version: 1\nkeyword_sets: {mine: [x]}\nagents:\n  a:\n    intents:\n"
        "      - {id: i, when: {text_equals: mine}, require: {tool: t}}\n"
    )
    assert lint(text) == []


def test_duplicate_keywords_follow_the_rules_normalisation() -> None:
    base = (
        "version: 1\nkeyword_sets: {k: [Refund, refund]}\nturn: {plan_condition: {text_contains: k}"
    )
    assert [f.code for f in lint(base + "}\n")] == ["duplicate-keyword"]
    assert lint(base + ", normalize: [strip]}\n") == []


def test_duplicate_keywords_follow_every_normalisation_step() -> None:
    """Two keywords are duplicates exactly when the matcher's own normaliser makes them equal:
    `ＰＬＡＮ` is `plan` under nfkc + lower and nothing else; `「好」` is `"好"` under folding."""

    def dupes(words: str, steps: str) -> list[str]:
        text = (
            f"version: 1\nkeyword_sets: {{k: {words}}}\n"
            f"turn: {{plan_condition: {{text_contains: k}}, normalize: {steps}}}\n"
        )
        return [f.code for f in lint(text)]

    assert dupes("[plan, ＰＬＡＮ]", "[nfkc, lower]") == ["duplicate-keyword"]
    assert dupes("[plan, ＰＬＡＮ]", "[lower]") == []
    assert dupes("[plan, ＰＬＡＮ]", "[nfkc]") == []
    assert dupes("[plan, Plan]", "[lower]") == ["duplicate-keyword"]
    assert dupes("['plan', ' plan']", "[lower]") == []
    assert dupes("['plan', ' plan']", "[strip]") == ["duplicate-keyword"]
    assert dupes("['好?', '好？']", "[fold_punctuation]") == ["duplicate-keyword"]
    assert dupes("['好?', '好？']", "[strip]") == []


def test_patterns_are_checked_even_without_a_registry() -> None:
    open_assembly = Assembly(core_schema(), (), (), closed=False)  # no registry: options unchecked
    result = analyze(
        "version: 1\ndetectors:\n  unknown_tool_repeat:\n    patterns: ['(']\n",
        "text",
        "p.yaml",
        assembly=open_assembly,
    )
    assert [(f.file, f.line, f.col, f.code) for f in result.errors] == [
        ("p.yaml", 4, 16, "bad-regex")
    ]


def test_exit_codes_and_text_format() -> None:
    clean = report(analyze("version: 1\n", "text", "c.yaml"))
    warned = report(analyze("version: 1\nkeyword_sets: {x: [a]}\n", "text", "w.yaml"))
    assert exit_code([clean]) == 0 and exit_code([clean, warned]) == 0
    assert exit_code([warned], strict=True) == 1
    assert format_text(warned.findings) == (
        "w.yaml:2:16: warning[unused-set]: keyword set 'x' is never used [keyword_sets.x]\n"
        "    hint: use it in a condition or remove it\n"
    )
