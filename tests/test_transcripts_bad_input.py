"""Bad input: a clear error naming file and line (or a warning when the replay can go on)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopguard import Finding, InputError
from loopguard.replay.transcripts import UserMessage, open_transcript


def error_of(path: Path, fmt: str | None = None) -> Finding:
    with pytest.raises(InputError) as info:
        list(open_transcript(str(path), fmt).events())
    finding = info.value.findings[0]
    assert finding.file == str(path) and finding.level == "error"
    return finding


def test_missing_file(tmp_path: Path) -> None:
    finding = error_of(tmp_path / "nope.jsonl")
    assert finding.code == "missing-file" and "not found" in finding.message


def test_directory(tmp_path: Path) -> None:
    assert error_of(tmp_path).code == "not-a-file"


@pytest.mark.parametrize("content", ["", "\n\n   \n"])
def test_empty_file(tmp_path: Path, content: str) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text(content)
    finding = error_of(path)
    assert finding.code == "empty-file" and finding.line == 1


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        b'{"a": 1}\n\xff\xfe\xfa garbage',
        '[{"role": "user"}]'.encode("utf-16"),
    ],
)
def test_binary_file(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "blob.json"
    path.write_bytes(data)
    finding = error_of(path)
    assert finding.code == "binary-file" and finding.line >= 1


@pytest.mark.parametrize(
    "content",
    [
        '{"foo": 1, "bar": [1, 2]}',
        "[1, 2, 3]",
        '"just a string"',
        "hello world",
        '{"messages": "not a list"}',
    ],
)
def test_json_of_the_wrong_shape(tmp_path: Path, content: str) -> None:
    path = tmp_path / "shape.json"
    path.write_text(content)
    finding = error_of(path)
    assert finding.code == "wrong-shape" and finding.line == 1 and finding.hint


def test_wrong_shape_with_a_forced_format(tmp_path: Path) -> None:
    path = tmp_path / "shape.json"
    path.write_text('{"foo": 1}')
    assert error_of(path, "openai-chat").code == "wrong-shape"
    assert error_of(path, "eventlog").code == "wrong-shape"


def test_mixed_formats_in_one_jsonl_file(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    rows = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c", "content": "x"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
        },
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    finding = error_of(path)
    assert finding.code == "mixed-formats" and finding.line == 4
    assert "anthropic" in finding.message and "openai-chat" in finding.message


def test_mixed_formats_in_an_event_log(tmp_path: Path) -> None:
    path = tmp_path / "mixed-log.jsonl"
    path.write_text(
        '{"event": "user_message", "text": "a"}\n'
        '{"type": "function_call", "call_id": "x", "name": "f", "arguments": "{}"}\n'
    )
    finding = error_of(path)
    assert finding.code == "mixed-formats" and finding.line == 2


def test_invalid_json_document_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text(
        '[\n  {"role": "user", "content": "a"},\n  {"role": "assistant", "content": "b",,}\n]\n'
    )
    finding = error_of(path)
    assert finding.code == "bad-json" and finding.line == 3


def test_truncated_document(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_text('{"messages": [\n {"role": "user", "content": "a"},\n {"role": "assist')
    finding = error_of(path)
    assert finding.code == "bad-json" and finding.line == 3


def test_truncated_last_line_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_text(
        '{"event": "user_message", "text": "a"}\n{"event": "user_message", "text": "b"}\n'
        '{"event": "assistant_mess'
    )
    got = list(open_transcript(str(path)).events())
    assert [e.text for e in got if isinstance(e, UserMessage)] == ["a", "b"]
    warning = got[-1]
    assert isinstance(warning, Finding) and warning.code == "truncated-line" and warning.line == 3
    assert warning.level == "warning"


def test_bad_middle_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "middle.jsonl"
    path.write_text(
        '{"event": "user_message", "text": "a"}\n{oops\n{"event": "user_message", "text": "b"}\n'
    )
    got = list(open_transcript(str(path)).events())
    assert [type(e).__name__ for e in got] == ["UserMessage", "Finding", "UserMessage"]
    assert got[1].code == "bad-line" and got[1].line == 2


def test_unknown_input_format(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text("[]")
    with pytest.raises(InputError) as info:
        open_transcript(str(path), "yaml")
    assert "unknown input format" in str(info.value)
