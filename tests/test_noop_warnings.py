"""Silent no-ops are reported: gated-off detectors (lint), unknown agent names
(replay CLI, `guard.session`); lint errors of a file that loads are lint's to report
(`Guard.from_file` loads it without running the lint-only checks)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from loopguard import Guard
from loopguard.cli import main
from loopguard.lint import linter
from loopguard.lint.linter import lint_bytes, lint_path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "transcripts"
POLL = str(EXAMPLES / "stuck-poll.anthropic.json")
RULES = str(EXAMPLES / "loop-detection.yaml")


def codes(text: str) -> list[str]:
    return [f.code for f in lint_bytes(text.encode()).findings]


def test_master_switch_false_makes_configured_rolling_detectors_warnings() -> None:
    text = (
        "version: 1\nloop_detection: {enabled: false}\n"
        "detectors:\n  generic_repeat: {enabled: true}\n"
    )
    [finding] = lint_bytes(text.encode()).findings
    assert (finding.level, finding.code, finding.line, finding.col) == (
        "warning",
        "gated-off",
        4,
        29,
    )
    assert "never runs" in finding.message and finding.hint


def test_no_warning_without_a_false_master_or_for_always_on_detectors() -> None:
    assert codes("version: 1\ndetectors:\n  generic_repeat: {enabled: true}\n") == []
    assert (
        codes(
            "version: 1\nloop_detection: {enabled: false}\n"
            "detectors:\n  doom_loop_exact: {threshold: 4}\n  ping_pong: {enabled: false}\n"
        )
        == []
    )


def test_an_agent_turning_the_master_on_keeps_global_options_meaningful() -> None:
    text = (
        "version: 1\nloop_detection: {enabled: false}\ndetectors:\n  ping_pong: {enabled: true}\n"
        "agents:\n  night:\n    loop_detection: {enabled: true}\n"
    )
    assert codes(text) == []


def test_an_agent_block_inherits_the_global_false_master() -> None:
    text = (
        "version: 1\nloop_detection: {enabled: false}\nagents:\n  night:\n"
        "    detectors:\n      post_compaction_guard: {enabled: true}\n"
    )
    assert codes(text) == ["gated-off"]


def test_replay_warns_about_an_unknown_agent_and_goes_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["replay", "--rules", RULES, "--agent", "nobdy", POLL])
    out, err = capsys.readouterr()
    assert code == 0 and "summary: 1 session" in out
    assert err == (
        f"{RULES}: warning: agent 'nobdy' has no block under agents; it runs with the "
        "global rules\n    hint: check the --agent name\n"
    )


def test_explain_warns_about_an_unknown_agent_too(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["explain", "--agent", "x", POLL, "-d", "1"])
    _, err = capsys.readouterr()
    assert code == 0 and "builtin:default: warning: agent 'x' has no block" in err


def test_session_logs_each_unknown_agent_once(caplog: pytest.LogCaptureFixture) -> None:
    guard = Guard.from_yaml("version: 1\nagents:\n  night: {}\n")
    with caplog.at_level(logging.WARNING, logger="loopguard"):
        for name in ("night", "nigth", "nigth", None, "other"):
            guard.session("s", agent=name)
    records = [r for r in caplog.records if r.name == "loopguard"]
    assert [r.levelno for r in records] == [logging.WARNING, logging.WARNING]
    assert "'nigth' has no block under agents" in records[0].getMessage()
    assert "'other'" in records[1].getMessage()


def test_unknown_agent_names_remembered_are_bounded(caplog: pytest.LogCaptureFixture) -> None:
    import loopguard.session.guard as guard_module

    guard = Guard.default()
    with caplog.at_level(logging.WARNING, logger="loopguard"):
        for i in range(guard_module.MAX_REPORTED_AGENTS + 20):
            guard.session("s", agent=f"a{i}")
    assert len(caplog.records) == guard_module.MAX_REPORTED_AGENTS
    assert len(guard._reported_agents) == guard_module.MAX_REPORTED_AGENTS


def test_from_file_loads_a_file_with_lint_errors_without_running_lint(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "version: 1\nloop_detection:\n  warning_threshold: 15\n  critical_threshold: 15\n"
        "intents:\n  - {id: a, when: {text_contains: x}, require: {tool: t}}\n"
        "  - {id: a, when: {text_contains: y}, require: {tool: u}}\n"
        "keyword_sets: {x: [x], y: [y]}\n",
        encoding="utf-8",
    )
    with caplog.at_level(logging.WARNING, logger="loopguard"):
        Guard.from_file(rules)
    assert caplog.records == []
    errors = [f for f in lint_path(str(rules)).findings if f.level == "error"]
    assert len(errors) == 2
    assert (
        errors[0]
        .format_text()
        .startswith(f"{rules}:4:23: error: critical_threshold (15) must be greater")
    )
    assert "intent id 'a' is used twice" in errors[1].message and errors[1].hint

    def no_lint() -> None:
        raise AssertionError("Guard.from_file ran the lint checks")

    monkeypatch.setattr(linter, "registry", no_lint)
    Guard.from_file(rules)


def test_from_file_of_a_clean_file_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="loopguard"):
        Guard.from_file(RULES)
        Guard.from_file("builtin:portfolio")
    assert caplog.records == []
