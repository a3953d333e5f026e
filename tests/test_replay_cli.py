"""`loopguard replay` and `loopguard explain` from the command line: formats, exit codes, bad
input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopguard.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "transcripts"
POLL = str(EXAMPLES / "stuck-poll.anthropic.json")
RULES = str(EXAMPLES / "loop-detection.yaml")
HEALTHY = str(EXAMPLES / "healthy-refactor.eventlog.jsonl")
PORTFOLIO = str(EXAMPLES / "portfolio-from-imagination.chat.json")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_text_report(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "replay", "--rules", RULES, POLL)
    assert code == 0 and err == ""  # no progress bar when stderr is not a terminal
    assert f"session {POLL}" in out
    assert "  1 turn, 10 tool calls: 4 allow, 3 warn, 1 critical, 2 breaker" in out
    assert (
        f"  #1  {POLL}:118  turn 1 call 5  command_status  WARN  known_poll_no_progress (count 3)"
        in out
    )
    assert "BREAKER  known_poll_no_progress (count 7, escalated)" in out
    assert (
        "      … and 1 more call blocked by the same loop (#6)" in out
    )  # folded after its breaker
    assert "#6  " not in out
    assert (
        out.rstrip()
        .splitlines()[-2]
        .startswith("summary: 1 session, 1 turn, 10 tool calls — 3 warn, 1 critical")
    )


def test_text_report_of_skipped_tools(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "replay", "--rules", "builtin:portfolio", PORTFOLIO)
    assert code == 0 and "(rules: builtin:portfolio)" in out
    assert out.count('SKIPPED REQUIRED TOOL portfolio(mode="diagnose")') == 2
    assert "a retry would have been sent" in out and "retry message: " in out


def test_json_lines(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "replay", "--rules", RULES, "--format", "json", POLL)
    rows = [json.loads(line) for line in out.splitlines()]
    decisions = [r for r in rows if r["record"] == "decision"]
    assert [d["index"] for d in decisions] == [1, 2, 3, 4, 5, 6]
    first = decisions[0]
    assert (first["file"], first["line"], first["session"], first["seq"]) == (POLL, 118, POLL, 5)
    assert first["action"] == "warn" and first["votes"][0]["detector"] == "known_poll_no_progress"
    assert rows[-2]["record"] == "session" and rows[-1]["record"] == "summary"
    assert rows[-1]["actions"] == {"allow": 4, "warn": 3, "critical": 1, "breaker": 2}


def test_github_annotations(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "replay", "--rules", RULES, "--format", "github", POLL)
    lines = out.splitlines()
    assert sum(line.startswith("::warning file=") for line in lines) == 3
    assert sum(line.startswith("::error file=") for line in lines) == 2
    assert (
        sum(
            line.startswith("::notice file=")
            and "1 more call blocked by the same loop (#6)" in line
            for line in lines
        )
        == 1
    )
    assert lines[0].startswith(
        f"::warning file={POLL},line=118,title=loopguard warn%3A known_poll_no_progress::"
    )


@pytest.mark.parametrize(("level", "expected"), [("warn", 1), ("critical", 1), ("breaker", 1)])
def test_fail_on_levels_reached(
    capsys: pytest.CaptureFixture[str], level: str, expected: int
) -> None:
    assert run(capsys, "replay", "--rules", RULES, "--fail-on", level, POLL)[0] == expected


def test_fail_on_not_reached(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "replay", "--fail-on", "warn", HEALTHY)[0] == 0
    rules = ("--rules", "builtin:portfolio")
    assert (
        run(capsys, "replay", *rules, "--fail-on", "critical", PORTFOLIO)[0] == 0
    )  # skipped tools count as warn
    assert run(capsys, "replay", *rules, "--fail-on", "warn", PORTFOLIO)[0] == 1
    assert (
        run(capsys, "replay", "--fail-on", "warn", PORTFOLIO)[0] == 0
    )  # the default requires no tool


def test_missing_file_exit_2_but_other_files_are_replayed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = str(tmp_path / "gone.jsonl")
    code, out, err = run(capsys, "replay", missing, HEALTHY)
    assert code == 2
    assert f"{missing}:1:1: error: file not found" in err
    assert "319 tool calls" in out and "1 unreadable input" in out


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"", "the file is empty"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00", "binary"),
        (b'{"foo": 1}', "cannot tell the transcript format"),
    ],
)
def test_unreadable_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, needle: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    code, _, err = run(capsys, "replay", str(path))
    assert code == 2 and f"{path}:1:1: error:" in err and needle in err


def test_invalid_arguments_do_not_stop_the_replay(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "args.jsonl"
    rows = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "a", "function": {"name": "w", "arguments": "{nope"}}],
        },
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, _ = run(capsys, "replay", str(path))
    assert code == 0 and "1 tool call: 1 allow" in out
    assert (
        f"{path}:2:1: the arguments of call a (w) are not valid JSON; replayed as raw text" in out
    )


def test_bad_rules_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("version: 1\nloop_detection: {warning_threshold: many}\n")
    code, out, err = run(capsys, "replay", "--rules", str(rules), HEALTHY)
    assert code == 2 and str(rules) in err and out == ""


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "replay")[0] == 2
    assert run(capsys, "replay", "--format", "xml", HEALTHY)[0] == 2
    assert run(capsys, "replay", "--input-format", "csv", HEALTHY)[0] == 2


def test_forced_input_format(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "replay", "--input-format", "eventlog", POLL)
    assert code == 2 and "no loopguard events found" in err


def test_explain(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", "--rules", RULES, POLL, "--decision", "4")
    assert code == 0
    assert out.startswith(f"decision #4 at {POLL}:199")
    assert "action: CRITICAL, decided by known_poll_no_progress" in out
    history = out.split("history at that moment")[1].split("thresholds")[0]
    assert sum(line.lstrip().startswith("*") for line in history.splitlines()) >= 5
    assert "> 8 " in history.replace("  ", " ")
    assert (
        "loop_detection.critical_threshold = 6" in out
        and "aggregator.escalate_criticals = 2" in out
    )


def test_replay_explain_flag_matches_explain(capsys: pytest.CaptureFixture[str]) -> None:
    first = run(capsys, "replay", "--rules", RULES, POLL, "--explain", "5")
    second = run(capsys, "explain", "--rules", RULES, POLL, "-d", "5")
    assert first == second and first[0] == 0 and "escalated" in first[1]


def test_explain_a_decision_that_does_not_exist(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "explain", HEALTHY, "--decision", "1")
    assert code == 2 and out == "" and "there is no decision #1; the replay reported 0" in err
    assert run(capsys, "explain", HEALTHY, "--decision", "0")[0] == 2


def test_progress_only_on_a_terminal_for_large_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopguard.cli import replay_cmd

    path = tmp_path / "log.jsonl"
    rows = [{"event": "user_message", "text": "go"}]
    for i in range(1500):
        rows += [
            {
                "event": "assistant_message",
                "tool_calls": [{"id": f"c{i}", "name": "read", "arguments": {"i": i}}],
            },
            {"event": "tool_result", "call_id": f"c{i}", "content": "ok"},
        ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert run(capsys, "replay", str(path))[2] == ""  # not a terminal: nothing on stderr
    monkeypatch.setattr(replay_cmd, "stderr_is_terminal", lambda: True)
    assert run(capsys, "replay", str(path))[2] == ""  # a terminal, but the input is small
    monkeypatch.setattr(replay_cmd, "PROGRESS_MIN_BYTES", 0)
    code, out, err = run(capsys, "replay", str(path))
    assert code == 0 and "replaying…" in err and "%" in err and "replaying" not in out
