"""Readers stream: memory stays flat however long the file is."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from loopguard.replay.transcripts import AssistantMessage, open_transcript


def write_eventlog(path: Path, calls: int) -> None:
    with path.open("w") as fh:
        fh.write(json.dumps({"event": "user_message", "text": "start"}) + "\n")
        for i in range(calls):
            fh.write(
                json.dumps(
                    {
                        "event": "assistant_message",
                        "tool_calls": [
                            {"id": f"c{i}", "name": "read", "arguments": {"path": f"src/{i}.py"}}
                        ],
                    }
                )
                + "\n"
            )
            fh.write(
                json.dumps({"event": "tool_result", "call_id": f"c{i}", "content": "x" * 40}) + "\n"
            )


def write_chat_document(path: Path, calls: int) -> None:
    with path.open("w") as fh:
        fh.write('{"model": "m", "messages": [\n{"role": "user", "content": "start"}')
        for i in range(calls):
            call = {
                "id": f"c{i}",
                "type": "function",
                "function": {"name": "read", "arguments": json.dumps({"path": f"src/{i}.py"})},
            }
            fh.write(
                ",\n" + json.dumps({"role": "assistant", "content": None, "tool_calls": [call]})
            )
            fh.write(
                ",\n" + json.dumps({"role": "tool", "tool_call_id": f"c{i}", "content": "x" * 40})
            )
        fh.write("\n]}\n")


def peak_while_reading(path: Path) -> tuple[int, int]:
    tracemalloc.start()
    try:
        count = sum(isinstance(e, AssistantMessage) for e in open_transcript(str(path)).events())
        return count, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_eventlog_memory_does_not_grow_with_length(tmp_path: Path) -> None:
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    write_eventlog(small, 10_000)
    write_eventlog(large, 100_000)
    n_small, peak_small = peak_while_reading(small)
    n_large, peak_large = peak_while_reading(large)
    assert (n_small, n_large) == (10_000, 100_000)
    assert peak_large < peak_small * 1.5 + 64 * 1024  # ten times the file, about the same memory
    assert peak_large < large.stat().st_size / 10


@pytest.mark.slow
def test_json_document_memory_does_not_grow_with_length(tmp_path: Path) -> None:
    small, large = tmp_path / "small.json", tmp_path / "large.json"
    write_chat_document(small, 5_000)
    write_chat_document(large, 50_000)
    assert open_transcript(str(large)).layout == "document"
    n_small, peak_small = peak_while_reading(small)
    n_large, peak_large = peak_while_reading(large)
    assert (n_small, n_large) == (5_000, 50_000)
    assert peak_large < peak_small * 1.5 + 64 * 1024
    assert peak_large < large.stat().st_size / 5


def test_jsonl_with_a_first_line_longer_than_the_sniffed_head(tmp_path: Path) -> None:
    path = tmp_path / "big-lines.jsonl"
    convo = {
        "messages": [
            {"role": "user", "content": "q" * 100_000},
            {"role": "assistant", "content": "a"},
        ]
    }
    path.write_text(json.dumps(convo) + "\n" + json.dumps(convo) + "\n")
    transcript = open_transcript(str(path))
    assert transcript.layout == "jsonl"
    sessions = {e.session for e in transcript.events() if isinstance(e, AssistantMessage)}
    assert sessions == {f"{path}:1", f"{path}:2"}
