"""Hostile transcripts through `loopguard replay` (issue #10): exit 0/1/2, never a traceback.

Huge integers, lone surrogates, non-string `type` fields, input that is not a regular file
(a pipe as /dev/stdin, a FIFO, a device) and repeated tool-call ids in one message.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopguard.cli import main

BIG = "9" * 5000  # over the interpreter's 4,300-digit int/text limit
HALF = "\\ud83d"  # a lone surrogate, as JSON text writes it


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["replay", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def chat(args: str = '{"p": 1}', user: str = "hi", result: str = '"ok"') -> str:
    """A one-call OpenAI chat transcript as JSON text with raw pieces spliced in."""
    arguments = json.dumps(args)
    return (
        f'[{{"role": "user", "content": "{user}"}}, '
        '{"role": "assistant", "content": null, "tool_calls": '
        '[{"id": "c1", "type": "function", "function": '
        f'{{"name": "read", "arguments": {arguments}}}}}]}}, '
        f'{{"role": "tool", "tool_call_id": "c1", "content": {result}}}]'
    )


@pytest.mark.parametrize(
    "text",
    [
        chat(result=BIG),
        chat(args=f'{{"n": {BIG}}}'),
        chat(result="-" + BIG),
        chat(result=f'{{"n": {BIG}}}'),
    ],
    ids=["result", "argument", "negative", "nested"],
)
@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_huge_integers_in_a_transcript(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, suffix: str
) -> None:
    path = tmp_path / f"t{suffix}"
    path.write_text(text if suffix == ".json" else _as_jsonl(text))
    code, out, err = run(capsys, str(path))
    assert code == 0, err
    assert "1 tool call" in out and "Traceback" not in err


def _as_jsonl(text: str) -> str:
    """A chat transcript as JSONL (huge ints are fine with the limit lifted here)."""
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return "\n".join(json.dumps(m) for m in json.loads(text)) + "\n"
    finally:
        sys.set_int_max_str_digits(limit)


def test_lone_surrogates_in_a_transcript(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.json"
    path.write_text(chat(user=f"{HALF} CHECK MY PORTFOLIO {HALF}", result=f'"r {HALF}"'))
    code, out, err = run(capsys, "--rules", "builtin:portfolio-en", str(path))
    assert code == 0, err
    assert "1 tool call" in out


NOT_TEXT = [[1], {"a": 1}, 5, None, True]


@pytest.mark.parametrize("kind", NOT_TEXT, ids=repr)
@pytest.mark.parametrize("shape", ["chat", "responses", "anthropic", "codex"])
def test_a_type_field_that_is_not_a_string(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: Any, shape: str
) -> None:
    lines: list[Any] = {
        "chat": [
            {"role": "user", "content": "hi", "type": kind},
            {
                "role": "assistant",
                "type": kind,
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": kind, "function": {"name": "read", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ok", "type": kind},
        ],
        "responses": [
            {"type": "message", "role": "user", "content": [{"type": kind, "text": "x"}]},
            {"type": "function_call", "call_id": "a", "name": "read", "arguments": "{}"},
            {"type": kind, "call_id": "a", "output": "x"},
        ],
        "anthropic": [
            {"role": "user", "content": [{"type": kind, "text": "x"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "u", "name": "read", "input": {}},
                    {"type": kind},
                ],
            },
        ],
        "codex": [
            {"type": kind, "payload": {"type": kind}},
            {"type": "response_item", "payload": {"type": kind, "x": 1}},
            {
                "type": "response_item",
                "payload": {
                    "type": "function_call",
                    "call_id": "a",
                    "name": "read",
                    "arguments": "{}",
                },
            },
        ],
    }[shape]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    code, _out, err = run(capsys, str(path))
    assert code in (0, 1, 2) and "Traceback" not in err


def test_repeated_call_ids_in_one_message_are_all_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"p": 1}'}}
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call] * 5},
    ]
    messages += [{"role": "tool", "tool_call_id": "c1", "content": f"r{i}"} for i in range(5)]
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(messages))
    code, out, err = run(capsys, "--format", "json", str(path))
    summary = [
        json.loads(line) for line in out.splitlines() if '"summary"' in line or '"session"' in line
    ]
    assert code == 0, err
    assert "5 tool calls" in err or any(s.get("calls") == 5 for s in summary) or '"calls": 5' in out


def test_repeated_call_ids_get_their_results_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"p": 1}'}}
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call] * 3},
    ]
    messages += [{"role": "tool", "tool_call_id": "c1", "content": f"r{i}"} for i in range(3)]
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(messages))
    code, out, _err = run(capsys, str(path))
    assert code == 0
    assert "3 tool calls" in out
    assert (
        "never answered" not in out and "no pending call" not in out
    )  # each result found its call


def _replay(argv: list[str], stdin: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopguard", "replay", *argv],
        stdin=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _calls(n: int) -> str:
    lines: list[Any] = [{"role": "user", "content": "hi"}]
    for i in range(n):
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
    return "\n".join(json.dumps(line) for line in lines) + "\n"


@pytest.mark.slow
def test_dev_stdin_on_a_pipe_is_refused_not_read_in_part(tmp_path: Path) -> None:
    data = _calls(400)
    assert len(data) > 64 * 1024
    source = tmp_path / "calls.jsonl"
    source.write_text(data)
    piped = subprocess.Popen(["cat", str(source)], stdout=subprocess.PIPE)
    done = _replay(["/dev/stdin"], piped.stdout)
    assert piped.stdout is not None
    piped.stdout.close()
    piped.wait()
    assert done.returncode == 2
    assert "is a pipe (FIFO), not a regular file" in done.stderr and "'-'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_dash_reads_a_pipe_whole(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "loopguard", "replay", "-"],
        input=_calls(400),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "400 tool calls" in done.stdout


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_blocking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    code, _out, err = run(capsys, str(fifo))  # opening it would block forever: it is never opened
    assert code == 2
    assert "is a pipe (FIFO), not a regular file" in err


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
def test_a_device_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run(capsys, "/dev/null")
    assert code == 2 and "is a device, not a regular file" in err


def test_factorial_result_in_a_transcript(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        digits = str(math.factorial(2000))
    finally:
        sys.set_int_max_str_digits(limit)
    path = tmp_path / "t.json"
    path.write_text(chat(result=digits))
    code, out, _err = run(capsys, str(path))
    assert code == 0 and "1 tool call" in out


class _Chunk(str):
    """A text chunk that counts the characters copied when appended to a text with `+`."""

    copied = 0

    def __radd__(self, other: str) -> str:
        _Chunk.copied += len(other) + len(self)
        return str.__add__(other, self)


class _Source:
    name = "big.json"

    def __init__(self, text: str, size: int) -> None:
        self._text, self._size = text, size

    def chunks(self) -> Any:
        for start in range(0, len(self._text), self._size):
            yield _Chunk(self._text[start : start + self._size])


def test_one_large_element_is_read_in_linear_time() -> None:
    """49 s for a 200 MB element before: each chunk was appended to the growing window."""
    from loopguard.replay.transcripts.jsonstream import stream_document

    text = json.dumps(
        [{"role": "tool", "content": "x" * 4_000_000}, {"role": "user", "content": "hi"}]
    )
    _Chunk.copied = 0
    items = list(stream_document(_Source(text, 4096), ()))  # type: ignore[arg-type]
    assert [item[3]["role"] for item in items] == ["tool", "user"]
    assert len(items[0][3]["content"]) == 4_000_000
    assert _Chunk.copied <= 4 * len(text)  # was ~ len(text)**2 / (2 * 4096): about 2,000x this
