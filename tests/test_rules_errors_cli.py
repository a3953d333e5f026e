"""Every command that runs with a rules file reports the file's lint errors on stderr first.

A file with such errors still loads (the engine repairs threshold order and a threshold that
can never fire is simply never reached), so before this the commands ran in silence.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopguard.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "transcripts"
HEALTHY = str(EXAMPLES / "healthy-refactor.eventlog.jsonl")
REDO = str(EXAMPLES / "redo-after-compaction.responses.json")

BAD = """version: 1
loop_detection:
  history_size: 10
  warning_threshold: 12
  critical_threshold: 11
  global_circuit_breaker_threshold: 14
detectors:
  doom_loop_exact: {window: 3, threshold: 5}
"""
# the three errors lint reports for BAD, as (line, col, code)
ERRORS = [(4, 22, "never-fires"), (5, 23, "threshold-order"), (8, 43, "never-fires")]


@pytest.fixture
def bad_rules(tmp_path: Path) -> str:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD, encoding="utf-8")
    return str(path)


def _reported(err: str, rules: str) -> list[tuple[int, int, str]]:
    found = []
    for line in err.splitlines():
        if line.startswith(rules + ":") and ": error[" in line:
            where, rest = line[len(rules) + 1 :].split(": error[", 1)
            row, col = where.split(":")
            found.append((int(row), int(col), rest.split("]", 1)[0]))
    return found


def test_lint_reports_the_same_errors(bad_rules: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", bad_rules]) == 1
    assert _reported(capsys.readouterr().out, bad_rules) == ERRORS


def test_replay_reports_them_and_goes_on(
    bad_rules: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", "--rules", bad_rules, HEALTHY]) == 0
    out, err = capsys.readouterr()
    assert _reported(err, bad_rules) == ERRORS
    assert f"loopguard: {bad_rules}: 3 lint errors in the rules" in err
    assert "summary" in out.lower()


@pytest.mark.parametrize("fmt", ["text", "json", "github"])
def test_a_fail_on_gate_fails_on_them(
    fmt: str, bad_rules: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", HEALTHY, "--fail-on", "breaker", "--format", fmt]) == 0
    capsys.readouterr()
    assert (
        main(["replay", "--rules", bad_rules, HEALTHY, "--fail-on", "breaker", "--format", fmt])
        == 1
    )
    assert _reported(capsys.readouterr().err, bad_rules) == ERRORS


def test_explain_reports_them(bad_rules: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--rules", bad_rules, REDO, "-d", "1", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert _reported(err, bad_rules) == ERRORS
    assert json.loads(out)["decision"]["index"] == 1


def test_config_reports_them(bad_rules: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--rules", bad_rules, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert _reported(err, bad_rules) == ERRORS
    assert json.loads(out)["rules"] == bad_rules


def test_an_ignore_comment_silences_them_as_in_lint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "quiet.yaml"
    path.write_text("# loopguard: disable=never-fires,threshold-order\n" + BAD, encoding="utf-8")
    assert main(["lint", str(path)]) == 0
    capsys.readouterr()
    assert main(["replay", "--rules", str(path), HEALTHY, "--fail-on", "breaker"]) == 0
    assert "error[" not in capsys.readouterr().err


def test_clean_rules_print_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--rules", "builtin:portfolio", HEALTHY, "--fail-on", "breaker"]) == 0
    assert "lint error" not in capsys.readouterr().err


def test_detectors_status_reports_them(bad_rules: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["detectors", "--rules", bad_rules])
    assert _reported(capsys.readouterr().err, bad_rules) == ERRORS
