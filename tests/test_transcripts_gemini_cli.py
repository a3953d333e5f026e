"""Gemini CLI's own chat recordings (issue 24, item 17).

Gemini CLI records each session under `~/.gemini/tmp/<project>/chats/`: `session-*.json`
(one object with `messages`) up to 2026-04, `session-*.jsonl` (metadata, then one line per
version of a message) since. The samples in tests/agent_samples/ are written for these tests
after Gemini CLI's ChatRecordingService (0.61.0).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopguard.cli import main
from loopguard.errors import InputError
from loopguard.findings import Finding
from loopguard.replay.transcripts import (
    AssistantMessage,
    ToolResult,
    UserMessage,
    open_transcript,
)

SAMPLES = Path(__file__).parent / "agent_samples"
LEGACY = SAMPLES / "gemini-cli-session.json"
JSONL = SAMPLES / "gemini-cli-session.jsonl"
LEGACY_ID = "5d0c1f2e-8a4b-4c71-9e36-2b7f0a9c4d15"
JSONL_ID = "0b7e3c9a-2f41-4d6e-8c15-93a0d2e7f4b8"


def digest(path: Path, fmt: str | None = None) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for event in open_transcript(str(path), fmt).events():
        if isinstance(event, UserMessage):
            out.append(("user", event.session, event.text))
        elif isinstance(event, AssistantMessage):
            out.append(("calls", event.session, [(c.name, c.arguments) for c in event.tool_calls]))
        elif isinstance(event, ToolResult):
            out.append(("result", event.call_id, event.content, event.is_error))
        elif isinstance(event, Finding):
            out.append(("warning", event.code))
    return out


@pytest.mark.parametrize("path", [LEGACY, JSONL], ids=lambda p: p.name)
@pytest.mark.parametrize("fmt", [None, "gemini"])
def test_a_recording_is_read_detected_or_forced(path: Path, fmt: str | None) -> None:
    transcript = open_transcript(str(path), fmt)
    assert (transcript.format, transcript.label) == ("gemini", "Gemini CLI chat recording")
    assert digest(path, fmt)


def test_the_legacy_json_recording() -> None:
    s = LEGACY_ID
    assert digest(LEGACY) == [
        ("user", s, "Why does `make test` fail?"),
        (
            "calls",
            s,
            [
                (
                    "run_shell_command",
                    {"command": "make test", "description": "Run the test suite"},
                ),
                ("read_file", {"absolute_path": "/src/proj/Makefil"}),
            ],
        ),
        (
            "result",
            "run_shell_command-1772442849402-1a2b3c",
            {"output": "Command: make test\nStdout: 2 failed, 10 passed\nExit Code: 2"},
            False,
        ),
        (
            "result",
            "read_file-1772442849402-4d5e6f",
            {"error": "File not found: /src/proj/Makefil"},
            True,  # status error
        ),
        ("calls", s, []),  # the info notice is skipped, the thought part too
        ("user", s, "Show me the failing test."),
        ("calls", s, [("search_file_content", {"pattern": "def test_"})]),
        (
            "result",
            "search_file_content-1772442984500-7a8b9c",
            {"output": "tests/test_a.py:3: def test_a():"},
            False,
        ),
        ("calls", s, []),
    ]
    texts = [
        e.text for e in open_transcript(str(LEGACY)).events() if isinstance(e, AssistantMessage)
    ]
    assert texts[1] == "Two tests fail; the Makefile path was misspelt."


def test_the_jsonl_recording_feeds_each_message_once_in_its_last_version() -> None:
    s = JSONL_ID
    curl = ("run_shell_command", {"command": "curl -s localhost:8080/health"})
    output = {"output": "Command: curl -s localhost:8080/health\nStdout: (empty)\nExit Code: 7"}
    assert digest(JSONL) == [
        ("user", s, "Is the service up?"),  # the CLI's functionResponse message is no turn
        ("calls", s, [curl]),
        ("result", "run_shell_command-1795183334300-0", output, False),
        ("calls", s, [curl]),  # written executing, then done: one call, with its result
        ("result", "run_shell_command-1795183337400-0", output, False),
        ("calls", s, []),
    ]


def write_jsonl(tmp_path: Path, lines: list[dict[str, Any]]) -> Path:
    path = tmp_path / "session-2026-11-20T14-02-0b7e3c9a.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


META = {"sessionId": "s-42", "projectHash": "ab" * 32, "startTime": "t", "lastUpdated": "t"}


def test_a_repeated_failing_call_in_a_recording_is_stopped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines: list[dict[str, Any]] = [META, {"id": "u", "type": "user", "content": "deploy"}]
    for n in range(6):
        call = {
            "id": f"c{n}",
            "name": "run_shell_command",
            "args": {"command": "./deploy.sh"},
            "status": "error",
            "result": [
                {
                    "functionResponse": {
                        "id": f"c{n}",
                        "name": "run_shell_command",
                        "response": {"error": "permission denied"},
                    }
                }
            ],
        }
        lines.append({"id": f"g{n}", "type": "gemini", "content": "", "toolCalls": [call]})
    path = write_jsonl(tmp_path, lines)
    assert main(["replay", "--format", "json", "--fail-on", "breaker", str(path)]) == 1
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    decisions = [r for r in records if r["record"] == "decision"]
    assert {r["session"] for r in records if "session" in r and r["record"] != "summary"} == {
        "s-42"
    }
    assert any(d["action"] == "breaker" for d in decisions)


def test_calls_from_function_call_parts_are_answered_by_function_responses(
    tmp_path: Path,
) -> None:
    call = {"functionCall": {"id": "f1", "name": "list_directory", "args": {"path": "."}}}
    answer = {
        "functionResponse": {"id": "f1", "name": "list_directory", "response": {"output": "src"}}
    }
    path = write_jsonl(
        tmp_path,
        [
            META,
            {"id": "u", "type": "user", "content": [{"text": "ls"}]},
            {"id": "g", "type": "gemini", "content": [call]},
            {"id": "r", "type": "user", "content": [answer]},
        ],
    )
    assert digest(path) == [
        ("user", "s-42", "ls"),
        ("calls", "s-42", [("list_directory", {"path": "."})]),
        ("result", "f1", {"output": "src"}, False),
    ]


def test_odd_lines_are_warnings_and_an_unfinished_call_has_no_result(tmp_path: Path) -> None:
    running = {"id": "c1", "name": "run_shell_command", "args": {}, "status": "executing"}
    path = write_jsonl(
        tmp_path,
        [
            META,
            {"id": "u", "type": "user", "content": "x"},
            {"id": "g", "type": "gemini", "content": "", "toolCalls": [running, {"id": "c2"}]},
            {"id": "q", "type": "robot", "content": "?"},
            {"unexpected": True},
        ],
    )
    found = digest(path)
    assert ("calls", "s-42", [("run_shell_command", {})]) in found
    assert not [e for e in found if e[0] == "result"]
    assert [e for e in found if e[0] == "warning"] == [
        ("warning", "bad-call"),  # c2 has no name
        ("warning", "bad-message"),  # the line that is no message
        ("warning", "bad-message"),  # the unknown type (a message waits for its next line)
    ]


def test_a_recording_without_messages_is_an_error(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path, [META, {"$set": {"lastUpdated": "t"}}])
    with pytest.raises(InputError) as info:
        list(open_transcript(str(path)).events())
    assert "no Gemini CLI chat messages found" in info.value.findings[0].message


def test_api_contents_are_still_read_as_contents() -> None:
    for name in ("gemini-contents.json", "gemini-checkpoint.json"):
        transcript = open_transcript(str(SAMPLES / name))
        assert (transcript.format, transcript.label) == ("gemini", "Gemini API contents")
