"""The CLI with standard streams it cannot use (issue 22, items 15 and 19): a full disk, a file
that refuses writes, a closed stdout or stdin, a file name that is not UTF-8, an absurd
decision number. Each is one line on stderr and exit 2, never a traceback. In process (the
CLI's `main`); tests/test_cli_broken_streams_process.py runs the real command for what only a
process shows (the interpreter's final flush, closed file descriptors).
"""

from __future__ import annotations

import errno
import io
import os
import sys
from pathlib import Path

import pytest

from loopguard.cli import main
from loopguard.hooks import client

SAMPLE = Path(__file__).parent / "agent_samples"
TRANSCRIPT = next(p for p in sorted(SAMPLE.iterdir()) if p.suffix in (".json", ".jsonl"))
RULES = Path(__file__).parents[1] / "rules" / "default.yaml"


class FullDisk(io.StringIO):
    """A stdout whose writes fail the way /dev/full's do."""

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


COMMANDS = {
    "replay": ["replay", str(TRANSCRIPT)],
    "replay-json": ["replay", "--format", "json", str(TRANSCRIPT)],
    "lint-json": ["lint", "--format", "json", str(RULES)],
    "schema": ["schema"],
    "detectors": ["detectors"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_full_disk_on_stdout_is_one_line_and_exit_2(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdout", FullDisk())
    code = main(COMMANDS[command])
    err = capsys.readouterr().err
    assert code == 2
    assert "cannot write the output: No space left on device" in err
    assert "Traceback" not in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("target", ["/dev/full", "/proc/version"])
def test_a_report_file_that_refuses_writes_is_one_line_and_exit_2(
    target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if not os.path.exists(target):
        pytest.skip(f"no {target}")
    code = main(["replay", "-o", target, str(TRANSCRIPT)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "loopguard replay: cannot write the output: " in err


@pytest.mark.parametrize("command", ["replay", "lint-json", "schema"])
def test_a_closed_stdout_is_one_line_and_exit_2(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdout", None)
    code = main(COMMANDS[command])
    assert sys.stdout is None  # put back as it was
    err = capsys.readouterr().err
    assert code == 2 and "standard output is closed" in err and "Traceback" not in err


def test_a_report_file_still_works_with_stdout_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdout", None)
    report = tmp_path / "report.txt"
    assert main(["replay", "-o", str(report), str(TRANSCRIPT)]) in (0, 1)
    assert "loopguard replay" in report.read_text(encoding="utf-8")


def test_a_closed_stderr_is_no_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", None)
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["lint", str(RULES)]) == 0
    assert sys.stderr is None


@pytest.mark.parametrize("argv", [["lint", "-"], ["replay", "-"]])
def test_a_closed_stdin_is_one_line_and_exit_2(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", None)
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and "standard input is closed" in err and "Traceback" not in err


def test_the_hook_allows_the_call_with_stdin_or_stdout_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("LOOPGUARD_HOOK_SERVER", "off")
    monkeypatch.setattr(sys, "stdin", None)
    assert client.main(["claude"]) == 0
    assert capsys.readouterr().out.strip() == "{}"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    monkeypatch.setattr(sys, "stdout", None)
    assert client.main(["claude"]) == 0


def test_a_file_name_that_is_not_utf8_in_an_html_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = tmp_path / (os.fsdecode(b"\xff\xfe") + TRANSCRIPT.suffix)
    name.write_bytes(TRANSCRIPT.read_bytes())
    report = tmp_path / "report.html"
    code = main(["replay", "--format", "html", "-o", str(report), str(name)])
    err = capsys.readouterr().err
    assert code in (0, 1) and "Traceback" not in err  # used to be a UnicodeEncodeError
    assert "\\udcff\\udcfe" in report.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "wanted", ["1" + "0" * 5000, "9" * 19, "²", "#" + "1" * 5000], ids=["5001", "19", "sup", "file"]
)
def test_an_impossible_decision_number_is_one_line_and_exit_2(
    wanted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if wanted.startswith("#"):
        wanted = f"{TRANSCRIPT}{wanted}"
    code = main(["replay", "--explain", wanted, str(TRANSCRIPT)])
    err = capsys.readouterr().err
    assert code == 2 and "is not a decision" in err and "Traceback" not in err
    assert len(err) < 400  # the 5,000 digits are not echoed
