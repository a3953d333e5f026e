"""Replay never passes silently: inputs with no tool call, formats it cannot tell, warnings that
dropped data under --fail-on, files that break off; sessions are per file unless joined; every
decision has a stable FILE#N id that `explain` takes; standard input is `-`."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from loopguard.cli import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "agent_samples"
POLL = str(ROOT / "examples" / "transcripts" / "stuck-poll.anthropic.json")
PORTFOLIO = str(ROOT / "examples" / "transcripts" / "portfolio-from-imagination.chat.json")
RULES = str(ROOT / "examples" / "transcripts" / "loop-detection.yaml")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_a_file_without_tool_calls_is_an_error_naming_file_and_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    chat = tmp_path / "talk.jsonl"
    chat.write_text(
        '{"type": "user", "isSidechain": false, "message": {"role": "user", "content": "hi"}}\n'
        '{"type": "assistant", "isSidechain": false, "message": {"id": "m1", "role": "assistant", '
        '"content": [{"type": "text", "text": "hello"}]}}\n'
    )
    code, out, err = run(capsys, "replay", "--fail-on", "warn", str(chat))
    assert code == 2
    assert (
        f"{chat}:1:1: error: no tool calls found: "
        "the file was read as Claude Code session (claude-code)" in err
    )
    assert "no tool calls in this session" in out and "no warnings" not in out


def test_a_format_that_cannot_be_told_lists_the_formats_tried(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    odd = tmp_path / "odd.json"
    odd.write_text('{"foo": [1, 2]}')
    code, _, err = run(capsys, "replay", str(odd))
    assert code == 2 and "cannot tell the transcript format" in err
    assert (
        "tried eventlog, claude-code, codex, openhands, swe-agent, mini-swe-agent, "
        "tau-bench, otlp, gemini" in err
    )


def test_warnings_that_drop_data_fail_under_fail_on(capsys: pytest.CaptureFixture[str]) -> None:
    cut = str(SAMPLES / "claude-code-truncated.jsonl")
    code, out, _ = run(capsys, "replay", cut)
    assert code == 0 and "1 input warning (1 dropped data)" in out
    assert f"{cut}:8:1: the last line is truncated (incomplete JSON); skipped [dropped data]" in out
    assert run(capsys, "replay", "--fail-on", "breaker", cut)[0] == 1
    code, out, _ = run(capsys, "replay", "--format", "json", cut)
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["drops_data"] for r in rows if r["record"] == "warning"] == [True]
    assert rows[-1]["input_warnings_dropping_data"] == 1


def test_a_warning_that_drops_nothing_does_not_fail(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "replay", "--fail-on", "warn", str(SAMPLES / "tau-bench-results.json")
    )
    assert "run task9-trial0 has no messages" in out and code == 0


def _tau(path: Path, result: str) -> None:
    run_ = {
        "task_id": 22,
        "trial": 0,
        "reward": 0.0,
        "info": {},
        "traj": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"q": 1}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": result},
        ],
    }
    path.write_text(json.dumps([run_]))


def test_sessions_are_per_file_unless_joined(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    _tau(first, "same")
    _tau(second, "same")
    code, out, _ = run(capsys, "replay", str(first), str(second))
    assert code == 0 and out.count("session task22-trial0") == 2 and "summary: 2 sessions" in out
    code, out, _ = run(capsys, "replay", "--join-sessions", str(first), str(second))
    assert (
        out.count("session task22-trial0") == 1
        and "summary: 1 session, 2 turns, 2 tool calls" in out
    )


def test_a_file_that_breaks_off_gets_no_all_clear(capsys: pytest.CaptureFixture[str]) -> None:
    broken = str(SAMPLES / "gemini-broken.json")
    code, out, err = run(capsys, "replay", broken)
    assert code == 2 and f"{broken}:4:1: error: invalid JSON" in err
    assert "no warnings" not in out and "could not be read to the end" in out


def test_decision_ids_are_per_file_and_explain_takes_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "replay", "--rules", RULES, "--format", "json", PORTFOLIO, POLL)
    ids = [json.loads(line)["id"] for line in out.splitlines() if '"record": "decision"' in line]
    assert ids[0] == f"{POLL}#1" and all(i.startswith(f"{POLL}#") for i in ids)
    alone = run(capsys, "explain", "--rules", RULES, POLL, "--decision", "2")
    together = run(capsys, "explain", "--rules", RULES, PORTFOLIO, POLL, "--decision", f"{POLL}#2")
    assert alone == together and alone[0] == 0 and alone[1].startswith(f"decision #2 at {POLL}:")
    code, _, err = run(capsys, "explain", "--rules", RULES, PORTFOLIO, POLL, "--decision", "2")
    assert code == 2 and "name it FILE#2" in err


def test_a_skipped_required_tool_names_intent_and_keyword_and_can_be_explained(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "replay", "--rules", "builtin:portfolio", PORTFOLIO)
    line = next(text for text in out.splitlines() if "why required" in text)
    assert 'intent portfolio_diagnose, matched "' in line and "of keyword set" in line
    assert f"  #1  {PORTFOLIO}:12  turn 1  SKIPPED REQUIRED TOOL" in out
    code, out, _ = run(
        capsys, "explain", "--rules", "builtin:portfolio", PORTFOLIO, "--decision", "1"
    )
    assert code == 0 and "intent: portfolio_diagnose (keyword" in out and "condition: " in out
    assert "user message: 帮我看看持仓" in out


def test_dash_reads_standard_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = (SAMPLES / "codex.jsonl").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, _ = run(capsys, "replay", "-")
    # the session is named by the id the recording gives, the input by `<stdin>`
    assert code == 0 and "(<stdin>)" in out and "4 tool calls" in out


def test_the_issue_cases_now_read_their_calls(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "replay",
        "--fail-on",
        "warn",
        str(SAMPLES / "claude-code.jsonl"),
        str(SAMPLES / "gemini-checkpoint.json"),
        str(SAMPLES / "mini-swe-agent-v2.traj.json"),
    )
    assert code == 0
    assert "2 turns, 3 tool calls" in out  # Gemini: function responses are no turns
    assert "unknown role 'exit'" not in out


def test_an_unwritable_output_path_is_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "missing-dir" / "report.html"
    code, out, err = run(capsys, "replay", "--format", "html", "-o", str(target), POLL)
    assert code == 2 and out == "" and f"{target}: error: cannot write the report" in err


def test_empty_standard_input_is_an_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    code, _, err = run(capsys, "replay", "-")
    assert code == 2 and "<stdin>:1:1: error: the file is empty" in err
