"""Standard input under the same limits as files (issue 22, item 1): `replay -` and `lint -`.

`replay -` spools stdin to a temporary file with no name on disk, at most STDIN_MAX_BYTES, and
stops at a binary start; `lint -` reads at most the 1 MiB rules limit (+1 byte to tell).
Each refusal is one error line, a non-zero exit, and nothing left in the temp folder.
"""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from loopguard.cli import main
from loopguard.config.layers import MAX_BYTES
from loopguard.replay.transcripts import source


def _chat_lines(calls: int) -> bytes:
    lines: list[Any] = [{"role": "user", "content": "hi"}]
    for i in range(calls):
        lines.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "read", "arguments": json.dumps({"p": i})},
                    }
                ],
            }
        )
        lines.append({"role": "tool", "tool_call_id": f"c{i}", "content": "x" * 200})
    return ("\n".join(json.dumps(line) for line in lines) + "\n").encode()


class _Stdin(io.TextIOWrapper):
    """A text stdin over bytes whose reads can be counted (`raw.tell()`)."""

    def __init__(self, data: bytes) -> None:
        self.raw_bytes = io.BytesIO(data)
        super().__init__(io.BufferedReader(self.raw_bytes))


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(folder))
    return folder


def test_replay_stdin_over_the_limit_is_one_error_and_leaves_nothing(
    temp_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(source, "STDIN_MAX_BYTES", 1 << 20)
    data = _chat_lines(6000)
    assert len(data) > 2 << 20
    stdin = _Stdin(data)
    monkeypatch.setattr(sys, "stdin", stdin)
    code = main(["replay", "-"])
    out, err = capsys.readouterr()
    assert code == 2
    errors = [line for line in err.splitlines() if "error" in line]
    assert errors == ["<stdin>:1:1: error: standard input is larger than 1 MiB"], err
    assert "Traceback" not in err
    assert stdin.raw_bytes.tell() < 2 << 20  # the copy stopped at the limit
    assert list(temp_dir.iterdir()) == []


def test_replay_stdin_under_the_limit_is_read_whole_from_the_unnamed_spool(
    temp_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", _Stdin(_chat_lines(400)))
    code = main(["replay", "-"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "400 tool calls" in out
    assert list(temp_dir.iterdir()) == []


def test_replay_stdin_gzipped_is_read(
    temp_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import gzip

    monkeypatch.setattr(sys, "stdin", _Stdin(gzip.compress(_chat_lines(50))))
    code = main(["replay", "-"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "50 tool calls" in out


def test_replay_closed_stdin_is_an_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", None)
    code = main(["replay", "-"])
    _out, err = capsys.readouterr()
    assert code == 2
    assert "<stdin>:1:1: error: standard input is closed" in err


def test_lint_stdin_reads_at_most_the_rules_limit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stdin = _Stdin(b"version: 1\n" + b"# padding\n" * 300_000)
    monkeypatch.setattr(sys, "stdin", stdin)
    code = main(["lint", "-"])
    out, err = capsys.readouterr()
    assert code == 1
    assert out.startswith("<stdin>:1:1: error[too-large]: file is too large"), out
    assert stdin.raw_bytes.tell() <= MAX_BYTES + 1 + io.DEFAULT_BUFFER_SIZE


def _limited(fsize: int = 0, memory: int = 0) -> Any:
    """A preexec_fn capping the child's file size and address space (old code filled both)."""

    def apply() -> None:
        if fsize:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        if memory:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return apply


@pytest.mark.slow
def test_replay_of_dev_zero_stops_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "tmp"
    folder.mkdir()
    with open("/dev/zero", "rb") as zero:
        done = subprocess.run(
            [sys.executable, "-m", "loopguard", "replay", "-"],
            stdin=zero,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "TMPDIR": str(folder)},
            preexec_fn=_limited(fsize=64 << 20),
        )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "<stdin>:1:1: error: the file is binary (it contains NUL bytes), not JSON or JSONL text"
    )
    assert list(folder.iterdir()) == []


@pytest.mark.slow
def test_lint_of_dev_zero_is_an_error_not_a_memory_error() -> None:
    with open("/dev/zero", "rb") as zero:
        done = subprocess.run(
            [sys.executable, "-m", "loopguard", "lint", "-"],
            stdin=zero,
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=_limited(memory=3 << 30),
        )
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("<stdin>:1:1: error[too-large]: file is too large")
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr


@pytest.mark.slow
def test_a_killed_replay_leaves_no_spool(tmp_path: Path) -> None:
    folder = tmp_path / "tmp"
    folder.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopguard", "replay", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "TMPDIR": str(folder)},
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(_chat_lines(4000))  # > the pipe buffer: returns once the child reads
        proc.stdin.flush()
        time.sleep(0.5)
        assert proc.poll() is None  # still spooling: stdin is open
        assert list(folder.iterdir()) == []  # the spool has no name on disk
        proc.kill()
        proc.wait(timeout=30)
        assert list(folder.iterdir()) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        if proc.stdin is not None:
            try:
                proc.stdin.close()
            except BrokenPipeError:
                pass
