"""Replay's size, depth and repetition limits hold for any input (issue 22, items 7, 8 and 10).

- One JSON element or JSONL line is at most MAX_ELEMENT_BYTES of text, after gunzip too: a
  small gzip holding one huge string is refused after reading about the limit, never held
  whole (a 3 MB .gz of one 3 GiB string peaked at 6.3 GB); a JSONL line over it is skipped
  with a warning, read past in chunks. The tests lower the limit to 1 MiB to stay cheap.
- A first JSONL line nested deeper than the JSON parser goes is no RecursionError out of
  format detection: that line is a warning, the rest is replayed.
- Tool calls repeating one id in one message cost linear time.
"""

from __future__ import annotations

import gzip
import json
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from loopguard.cli import main
from loopguard.replay.transcripts import detect, jsonstream, source

LIMIT = 1 << 20


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The element limit (and detection's look past the head) at 1 MiB; counts the bytes
    gunzip hands out."""
    monkeypatch.setattr(source, "MAX_ELEMENT_BYTES", LIMIT, raising=False)
    monkeypatch.setattr(jsonstream, "MAX_ELEMENT_CHARS", LIMIT)
    monkeypatch.setattr(detect, "SCAN_MAX_BYTES", LIMIT)
    counted = {"bytes": 0}
    read, readline = source._Gunzip.read, source._Gunzip.readline

    def counting_read(self: Any, size: int | None = -1) -> bytes:
        data = read(self, size)
        counted["bytes"] += len(data)
        return data

    def counting_readline(self: Any, size: int | None = -1) -> bytes:
        data = readline(self, size)
        counted["bytes"] += len(data)
        return data

    monkeypatch.setattr(source._Gunzip, "read", counting_read)
    monkeypatch.setattr(source._Gunzip, "readline", counting_readline)
    return counted


def _chat_lines(calls: int) -> list[str]:
    lines = [json.dumps({"role": "user", "content": "hi"})]
    for i in range(calls):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "t", "arguments": "{}"}}
        lines.append(json.dumps({"role": "assistant", "content": None, "tool_calls": [call]}))
        lines.append(json.dumps({"role": "tool", "tool_call_id": f"c{i}", "content": "same"}))
    return lines


def _string_bomb(path: Path, size: int, newline_after: bool = False) -> None:
    """A gzip of one JSON document whose first message holds one string of `size` bytes."""
    with gzip.open(path, "wb", 6) as out:
        out.write(b'{"messages": [{"role": "user", "content": "')
        block = b"a" * (1 << 20)
        for _ in range(size >> 20):
            out.write(block)
        out.write(b'"}]}' + (b"\n" if newline_after else b""))


def test_a_gzip_string_bomb_is_refused_after_about_the_limit(
    tmp_path: Path, small_limit: dict[str, int], capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bomb.json.gz"
    _string_bomb(path, 48 << 20)
    assert path.stat().st_size < 200_000
    code = main(["replay", "--color", "never", str(path)])
    _, err = capsys.readouterr()
    assert code == 2
    assert "a JSON element is larger than 1 MiB" in err and "Traceback" not in err
    assert small_limit["bytes"] < 6 * LIMIT  # detection and the element: never the 48 MiB


def test_an_element_under_the_limit_is_still_read(
    tmp_path: Path, small_limit: dict[str, int], capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _chat_lines(3)
    big = json.dumps({"role": "user", "content": "b" * (LIMIT - 4096)})
    path = tmp_path / "ok.json.gz"
    path.write_bytes(gzip.compress(("[" + ",".join([big, *lines]) + "]").encode()))
    code = main(["replay", "--color", "never", "--format", "json", str(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out.splitlines()[-1])["calls"] == 3


@pytest.mark.parametrize("newline_after", [False, True], ids=["one-line", "then-lines"])
def test_a_first_line_over_the_limit_is_never_scanned_to_its_end(
    tmp_path: Path,
    small_limit: dict[str, int],
    capsys: pytest.CaptureFixture[str],
    newline_after: bool,
) -> None:
    """Format detection looks for the end of a long first line only as far as the limit."""
    path = tmp_path / "bomb.jsonl.gz"
    _string_bomb(path, 48 << 20, newline_after)
    if newline_after:
        with gzip.open(path, "ab") as more:
            more.write(("\n".join(_chat_lines(3)) + "\n").encode())
    code = main(["replay", "--color", "never", str(path)])
    _, err = capsys.readouterr()
    assert code == 2
    assert "larger than 1 MiB" in err and "Traceback" not in err
    assert small_limit["bytes"] < 6 * LIMIT


@pytest.mark.parametrize("gzipped", [True, False], ids=["gzip", "plain"])
def test_a_jsonl_line_over_the_limit_is_skipped_and_never_held(
    tmp_path: Path,
    small_limit: dict[str, int],
    capsys: pytest.CaptureFixture[str],
    gzipped: bool,
) -> None:
    huge = json.dumps({"role": "user", "content": "x" * (24 * LIMIT)})
    first, *rest = _chat_lines(3)
    text = "\n".join([first, huge, *rest]) + "\n"
    path = tmp_path / ("long.jsonl.gz" if gzipped else "long.jsonl")
    path.write_bytes(gzip.compress(text.encode()) if gzipped else text.encode())
    tracemalloc.start()
    try:
        code = main(["replay", "--color", "never", "--format", "json", str(path)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    out, err = capsys.readouterr()
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    warnings = [r for r in records if r["record"] == "warning"]
    assert [(w["line"], w["code"]) for w in warnings] == [(2, "bad-line")]
    assert "longer than 1 MiB" in warnings[0]["message"]
    assert records[-1]["calls"] == 3  # the rest of the file was replayed
    assert peak < 8 * LIMIT, peak  # the 24 MiB line was never held


def test_a_deep_first_jsonl_line_is_a_warning_not_a_recursion_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = '{"a":' * 5000 + "1" + "}" * 5000
    first = '{"event": "assistant_message", "tool_calls": '
    first += f'[{{"id": "c", "name": "t", "arguments": {deep}}}]}}'
    events = [first, '{"event": "user_message", "text": "go"}']
    for i in range(4):
        call = {"id": f"c{i}", "name": "t", "arguments": {"p": 1}}
        events.append(json.dumps({"event": "assistant_message", "tool_calls": [call]}))
        events.append(json.dumps({"event": "tool_result", "call_id": f"c{i}", "content": "x"}))
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(events) + "\n")
    code = main(["replay", "--color", "never", "--format", "json", str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "RecursionError" not in err
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    warnings = [r for r in records if r["record"] == "warning"]
    assert [(w["line"], w["code"]) for w in warnings] == [(1, "bad-line")]
    assert "nested too deeply" in warnings[0]["message"]
    assert records[-1]["calls"] == 4


def _repeated_ids(path: Path, calls: int) -> None:
    call = {"id": "same", "type": "function", "function": {"name": "t", "arguments": "{}"}}
    message = {"role": "assistant", "content": None, "tool_calls": [call] * calls}
    results = [{"role": "tool", "tool_call_id": "same", "content": f"r{i}"} for i in range(calls)]
    path.write_text(json.dumps([{"role": "user", "content": "x"}, message, *results]))


def test_a_call_id_repeated_in_one_message_costs_linear_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    timings = []
    for calls in (1000, 3000):
        path = tmp_path / f"dup{calls}.json"
        _repeated_ids(path, calls)
        started = time.perf_counter()
        code = main(["replay", "--format", "json", "-o", str(tmp_path / "out.jsonl"), str(path)])
        timings.append(time.perf_counter() - started)
        capsys.readouterr()
        assert code == 0
        records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
        assert records[-1]["calls"] == calls
        # every call got its own result, in order: none unanswered, none orphaned
        assert {r.get("code") for r in records if r["record"] == "warning"} == {"duplicate-call"}
    # 3x the calls: linear is ~3x; quadratic was ~9x (1,000 calls 2.9 s, 4,000 33 s on a busy
    # 2-core machine). The bound leaves room for the noise of a busy machine
    assert timings[1] < 6 * timings[0], timings
