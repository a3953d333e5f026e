"""`loopguard explain --format json`: the text explanation as one JSON object."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopguard.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "transcripts"
POLL = str(EXAMPLES / "stuck-poll.anthropic.json")
RULES = str(EXAMPLES / "loop-detection.yaml")
PORTFOLIO = str(EXAMPLES / "portfolio-from-imagination.chat.json")


def explain(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:  # type: ignore[type-arg]
    code = main(["explain", *argv, "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0 and "Traceback" not in out + err
    result: dict = json.loads(out)  # type: ignore[type-arg]
    return result


def test_decision_history_and_thresholds(capsys: pytest.CaptureFixture[str]) -> None:
    data = explain(capsys, "--rules", RULES, POLL, "--decision", "4")
    decision = data["decision"]
    assert (decision["record"], decision["index"], decision["line"]) == ("decision", 4, 199)
    assert decision["action"] == "critical" and decision["detector"] == "known_poll_no_progress"
    marks = {row["seq"]: row["mark"] for row in data["history"]}
    assert marks[8] == "this" and sum(m == "evidence" for m in marks.values()) >= 5
    first = data["history"][0]
    assert first["file"] == POLL and first["line"] == 9 and isinstance(first["args"], dict)
    assert data["thresholds"]["loop_detection.critical_threshold"] == 6
    assert data["thresholds"]["aggregator.escalate_criticals"] == 2


def test_same_thresholds_as_the_text(capsys: pytest.CaptureFixture[str]) -> None:
    data = explain(capsys, "--rules", RULES, POLL, "-d", "5")
    main(["explain", "--rules", RULES, POLL, "-d", "5"])
    text = capsys.readouterr().out.split("thresholds involved (from the effective rules):\n")[1]
    shown = [line.split(" = ")[0].strip() for line in text.splitlines() if " = " in line]
    assert shown == list(data["thresholds"])


def test_skipped_required_tool(capsys: pytest.CaptureFixture[str]) -> None:
    data = explain(capsys, "--rules", "builtin:portfolio", PORTFOLIO, "-d", "1")
    assert data["decision"]["record"] == "skipped_required_tool"
    assert data["intent"]["id"] and data["intent"]["require"]
    assert "turn.max_incomplete_tool_retries" in data["thresholds"]


def test_replay_explain_flag_with_json_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--rules", RULES, POLL, "--explain", "4", "--format", "json"]) == 0
    first = capsys.readouterr().out
    assert (
        first
        == json.dumps(
            explain(capsys, "--rules", RULES, POLL, "-d", "4"), indent=2, ensure_ascii=False
        )
        + "\n"
    )


def test_missing_decision_is_still_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--rules", RULES, POLL, "-d", "99", "--format", "json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "there is no decision #99" in err
