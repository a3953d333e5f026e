"""Terminal control characters from inputs never reach the terminal raw (issue 22, item 5).

Tool names, results, rules keys and values, and file names come from files loopguard did not
write. In the text and GitHub outputs of replay, explain, lint and config (and on stderr)
each C0 control but newline and tab, DEL and each C1 control is written as `\\xNN`; JSON
output spells them `\\u00NN`, so the value read back is the original. loopguard's own colour
codes and the progress line's carriage returns still work.
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from loopguard.cli import main
from loopguard.cli.replay_cmd import Progress
from loopguard.text.terminal import SafeText, cli_streams, escape_controls

# What a terminal acts on: OSC window title (ESC ] ... BEL), erase screen, colour, a C1 CSI,
# NUL, DEL, a carriage return (overwrites the line) and a backspace.
EVIL = "\x1b]0;PWNED\x07\x1b[2J\x1b[31mread\x9b0m\x00\x7f\r\x08"
EVIL_SHOWN = "\\x1b]0;PWNED\\x07\\x1b[2J\\x1b[31mread\\x9b0m\\x00\\x7f\\x0d\\x08"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # anything but newline and tab


def chat(tool: str = EVIL, calls: int = 4) -> str:
    """A transcript whose one tool, called with the same arguments each time, loops."""
    messages: list[Any] = [{"role": "user", "content": "go"}]
    for i in range(calls):
        call = {"id": f"c{i}", "type": "function"}
        call["function"] = {"name": tool, "arguments": '{"p": 1}'}  # type: ignore[assignment]
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "same " + tool})
    return json.dumps({"id": "s" + tool, "messages": messages})


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "t.json"
    path.write_text(chat())
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_escape_controls_spells_each_control_and_keeps_the_rest() -> None:
    assert escape_controls(EVIL) == EVIL_SHOWN
    kept = "line\n\ttab é 工具 \u200f \ufeff ok"
    assert escape_controls(kept) is kept
    assert escape_controls("\x85 \x9f \x80") == "\\x85 \\x9f \\x80"  # NEL and the C1 ends


@pytest.mark.parametrize("fmt", ["text", "github"])
def test_replay_escapes_tool_names_and_messages(
    transcript: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    code, out, err = run(capsys, "replay", "--color", "never", "--format", fmt, str(transcript))
    assert code == 0, err
    assert RAW.search(out) is None, repr(RAW.search(out))
    assert RAW.search(err) is None
    shown = EVIL_SHOWN if fmt == "text" else EVIL_SHOWN.replace("\\x0d", "%0D")  # a new line
    assert shown in out
    assert "CRITICAL" in out or "::error" in out  # the loop is still reported


def test_replay_colour_codes_are_loopguards_own(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "replay", "--color", "always", str(transcript))
    assert code == 0
    assert "\x1b[1m\x1b[31mCRITICAL\x1b[0m" in out  # painted
    assert EVIL_SHOWN in out  # the tool name's own sequences are not
    assert "\x1b]" not in out and "\x07" not in out and "\x9b" not in out


def test_replay_json_escapes_but_keeps_the_value(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "replay", "--format", "json", str(transcript))
    assert code == 0
    assert RAW.search(out) is None
    records = [json.loads(line) for line in out.splitlines()]
    assert {r["tool"] for r in records if r["record"] == "decision"} == {EVIL}
    assert "\\u009b" in out and "\\u007f" in out


def test_file_names_are_escaped_in_reports_and_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    named = tmp_path / "\x1b]0;x\x07.json"
    named.write_text(chat("read"))
    missing = str(tmp_path / "gone\x1b[2J.json")
    code, out, err = run(capsys, "replay", "--color", "never", str(named), missing)
    assert code == 2  # the missing file
    assert RAW.search(out) is None and RAW.search(err) is None
    assert "\\x1b]0;x\\x07.json" in out
    assert "gone\\x1b[2J.json:1:1: error: file not found" in err


def test_explain_escapes(transcript: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "explain", "--color", "never", "-d", "1", str(transcript))
    assert code == 0, err
    assert RAW.search(out) is None
    assert EVIL_SHOWN in out
    code, out, _ = run(capsys, "explain", "--format", "json", "-d", "1", str(transcript))
    assert code == 0 and RAW.search(out) is None
    assert json.loads(out)["decision"]["tool"] == EVIL


def test_lint_escapes_the_key_in_the_path_suffix_and_the_file_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "\x1b]0;t\x07.yaml"
    rules.write_text('version: 1\n"\\e]0;PWNED\\a\\e[2Jx\\u009b": 1\n')
    for fmt in ("text", "github"):
        code, out, err = run(capsys, "lint", "--color", "never", "--format", fmt, str(rules))
        assert code == 1
        assert RAW.search(out) is None and RAW.search(err) is None, (fmt, out)
        assert "[\\x1b]0;PWNED\\x07\\x1b[2Jx\\x9b]" in out  # the [path] suffix
        assert "\\x1b]0;t\\x07.yaml" in out
    code, out, _ = run(capsys, "lint", "--format", "json", str(rules))
    assert RAW.search(out) is None
    assert json.loads(out)[0]["path"] == "\x1b]0;PWNED\x07\x1b[2Jx\x9b"


def test_config_escapes_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text('version: 1\nkeyword_sets:\n  evil: ["\\e]0;PWNED\\a", "\\u009b2J"]\n')
    code, out, err = run(capsys, "config", "--color", "never", "--rules", str(rules))
    assert code == 0, err
    assert RAW.search(out) is None
    assert '"\\u001b]0;PWNED\\u0007", "\\x9b2J"' in out  # values are shown as JSON text
    code, out, _ = run(capsys, "config", "--format", "json", "--rules", str(rules))
    assert code == 0 and RAW.search(out) is None
    assert json.loads(out)["config"]["keyword_sets"]["evil"] == ["\x1b]0;PWNED\x07", "\x9b2J"]


def test_stderr_is_escaped_during_a_command_and_restored_after(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "replay", "--color", "never", "no\x1b[2Jsuch.json")
    assert code == 2
    assert "no\\x1b[2Jsuch.json" in err and RAW.search(err) is None
    assert not isinstance(sys.stderr, SafeText)


def test_the_progress_line_keeps_its_carriage_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    with cli_streams():
        assert isinstance(sys.stderr, SafeText)
        progress = Progress(100 << 20)
        progress(50 << 20)
        progress.close()
        print("a\rb", file=sys.stderr)
    assert stderr.getvalue().startswith("\rreplaying…  50% (50 of 100 MB)\r")
    assert stderr.getvalue().endswith("a\\x0db\n")


def test_detectors_escapes_the_rules_file_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "\x1b]0;t\x07.yaml"
    rules.write_text("version: 1\n")
    code, out, err = run(capsys, "detectors", "--color", "never", "--rules", str(rules))
    assert code == 0, err
    assert RAW.search(out) is None
    assert "\\x1b]0;t\\x07.yaml" in out
