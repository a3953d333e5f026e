"""Each reader turns its format into the same normalised events."""

from __future__ import annotations

import json
from pathlib import Path

from loopguard import Finding
from loopguard.replay.transcripts import (
    AssistantMessage,
    Compaction,
    EndOfSession,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
    open_transcript,
)


def events(path: Path, fmt: str | None = None) -> list:
    return list(open_transcript(str(path), fmt).events())


def kinds(items: list) -> list[str]:
    return [type(item).__name__ for item in items]


def test_chat_document_with_messages(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(
        json.dumps(
            {
                "model": "gpt",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "read", "arguments": '{"path": "a"}'},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": "c1", "content": "text of a"},
                    {"role": "assistant", "content": "done"},
                ],
            },
            indent=2,
        )
    )
    transcript = open_transcript(str(path))
    assert (transcript.format, transcript.layout) == ("openai-chat", "document")
    got = list(transcript.events())
    assert kinds(got) == [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolResult",
        "AssistantMessage",
        "EndOfSession",
    ]
    assert got[1] == UserMessage(str(path), "hi", file=str(path), line=8)  # the line of its "{"
    assert got[2].tool_calls == (ToolCall("c1", "read", {"path": "a"}),)
    assert got[3].call_id == "c1" and got[3].content == "text of a" and not got[3].is_error
    assert got[4].text == "done"


def test_chat_jsonl_one_conversation_per_line(tmp_path: Path) -> None:
    path = tmp_path / "dataset.jsonl"
    lines = [
        {"messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": "a"}]}
        for i in range(3)
    ]
    lines[2]["id"] = "third"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    got = events(path)
    users = [e for e in got if isinstance(e, UserMessage)]
    assert [u.session for u in users] == [f"{path}:1", f"{path}:2", "third"]
    assert [u.text for u in users] == ["q0", "q1", "q2"]
    assert sum(isinstance(e, EndOfSession) for e in got) == 3


def test_chat_array_and_legacy_function_call(tmp_path: Path) -> None:
    path = tmp_path / "legacy.json"
    path.write_text(
        json.dumps(
            [
                {"role": "user", "content": "x"},
                {
                    "role": "assistant",
                    "content": None,
                    "function_call": {"name": "f", "arguments": "{}"},
                },
                {"role": "function", "name": "f", "content": "ok"},
            ]
        )
    )
    got = events(path)
    call = got[1].tool_calls[0]
    assert call.name == "f" and got[2].call_id == call.id


def test_responses_groups_message_and_function_calls(tmp_path: Path) -> None:
    path = tmp_path / "resp.json"
    path.write_text(
        json.dumps(
            {
                "instructions": "sys",
                "input": [
                    {"role": "user", "content": [{"type": "input_text", "text": "list files"}]},
                    {"type": "reasoning", "summary": []},
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": "Looking."}],
                    },
                    {
                        "type": "function_call",
                        "call_id": "f1",
                        "name": "ls",
                        "arguments": '{"dir": "."}',
                    },
                    {
                        "type": "function_call",
                        "call_id": "f2",
                        "name": "ls",
                        "arguments": '{"dir": "src"}',
                    },
                    {"type": "function_call_output", "call_id": "f1", "output": "a b"},
                    {"type": "function_call_output", "call_id": "f2", "output": "c"},
                    {"type": "compaction", "encrypted_content": "..."},
                ],
                "output": [
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": "ok"}],
                    }
                ],
            }
        )
    )
    got = events(path)
    assert open_transcript(str(path)).format == "openai-responses"
    assert kinds(got) == [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolResult",
        "ToolResult",
        "Compaction",
        "AssistantMessage",
        "EndOfSession",
    ]
    reply = got[2]
    assert reply.text == "Looking." and [c.id for c in reply.tool_calls] == ["f1", "f2"]
    assert reply.tool_calls[1].arguments == {"dir": "src"}
    assert got[6].text == "ok" and got[6].tool_calls == ()


def test_anthropic_tool_use_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "claude.json"
    path.write_text(
        json.dumps(
            {
                "system": "you are an agent",
                "messages": [
                    {"role": "user", "content": "fix it"},
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "text", "text": "Running."},
                            {
                                "type": "tool_use",
                                "id": "t1",
                                "name": "bash",
                                "input": {"cmd": "make"},
                            },
                        ],
                    },
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "t1",
                                "is_error": True,
                                "content": [{"type": "text", "text": "make: *** failed"}],
                            },
                            {"type": "text", "text": "(reminder)"},
                        ],
                    },
                    {"role": "assistant", "content": "It failed."},
                ],
            }
        )
    )
    got = events(path)
    assert kinds(got) == [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolResult",
        "AssistantMessage",
        "EndOfSession",
    ]
    assert got[2].tool_calls == (ToolCall("t1", "bash", {"cmd": "make"}),)
    assert got[3] == ToolResult(
        str(path), "t1", None, "make: *** failed", True, file=str(path), line=1
    )


def test_eventlog_sessions_runs_and_compaction(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    rows = [
        {"event": "user_message", "session_id": "a", "run_id": "r1", "text": "go"},
        {
            "event": "assistant_message",
            "session_id": "a",
            "run_id": "r1",
            "tool_calls": [{"id": "c1", "name": "read", "arguments": {"p": 1}}],
        },
        {"event": "user_message", "session_id": "b", "text": "other"},
        {"event": "tool_result", "session_id": "a", "call_id": "c1", "content": {"ok": True}},
        {"event": "compaction", "session_id": "a"},
        {"event": "session_end", "session_id": "a"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    got = events(path)
    assert kinds(got) == [
        "UserMessage",
        "AssistantMessage",
        "UserMessage",
        "ToolResult",
        "Compaction",
        "EndOfSession",
    ]
    assert got[0].run_id == "r1" and got[0].line == 1 and got[2].session == "b"
    assert got[3].content == {"ok": True} and got[4] == Compaction("a", file=str(path), line=5)


def test_eventlog_without_session_uses_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_text(
        '{"event": "user_message", "text": "hi"}\n{"event": "system_message", "text": "s"}\n'
    )
    got = events(path)
    assert got == [
        UserMessage(str(path), "hi", file=str(path), line=1),
        SystemMessage(str(path), "s", file=str(path), line=2),
    ]


def test_invalid_arguments_are_kept_raw_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "bad-args.json"
    path.write_text(
        json.dumps(
            [
                {"role": "user", "content": "x"},
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "c1", "function": {"name": "w", "arguments": '{"a": 1'}}],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            ],
            indent=1,
        )
    )
    got = events(path)
    warnings = [e for e in got if isinstance(e, Finding)]
    assert len(warnings) == 1 and warnings[0].code == "bad-arguments" and warnings[0].line == 6
    call = next(e for e in got if isinstance(e, AssistantMessage)).tool_calls[0]
    assert call.arguments == '{"a": 1'


def test_forced_format_overrides_detection(tmp_path: Path) -> None:
    path = tmp_path / "plain.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    assert open_transcript(str(path)).format == "openai-chat"
    transcript = open_transcript(str(path), "anthropic")
    assert transcript.format == "anthropic"
    assert kinds(list(transcript.events())) == ["UserMessage", "EndOfSession"]
