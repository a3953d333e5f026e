"""`--help` fits the terminal and says what the exit codes mean; RulesError text stays readable."""

from __future__ import annotations

import pytest

import loopguard
from loopguard.cli import main
from loopguard.errors import RulesError


def _help(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main([command, "--help"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", ["config", "replay", "explain", "lint"])
def test_help_is_wrapped_to_the_terminal(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "64")
    text = _help(command, capsys)
    # over the width although it could have been broken (argparse never breaks one long
    # token such as a list of choices, so a line ending in one is not counted)
    long = [line for line in text.splitlines() if len(line) > 64 and len(line.split()[-1]) < 40]
    assert long == []


def test_replay_help_lists_its_exit_codes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    text = " ".join(_help("replay", capsys).split())
    assert "Exit codes: 0 done" in text
    assert "1 a decision reached the `--fail-on` level" in text and "2 usage error" in text
    assert "Exit codes: 0 shown" in " ".join(_help("explain", capsys).split())


def test_config_help_keeps_its_paragraphs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    text = _help("config", capsys)
    assert "\n\nPrints what the engine runs with:" in text
    # re-flowed: one line per paragraph at 200 columns, not the docstring's 100-column breaks
    assert "the file merged, the agent's block merged over them" in text


def test_rules_error_count_is_not_glued_onto_the_hint() -> None:
    with pytest.raises(RulesError) as raised:
        loopguard.Guard.from_yaml(
            "version: 1\nloop_detection: {warning_treshold: 4, history_sise: 3}\n"
        )
    first, hint = str(raised.value).split("\n")
    assert first.endswith("(and 1 more error)") and "warning_treshold" in first
    assert hint.startswith("    hint: ") and "more" not in hint
