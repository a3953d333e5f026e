"""The agents' own formats, on small samples written for these tests (tests/agent_samples/):
what each reader makes of them, call by call, including damaged and cut-off files."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from typing import Any

import pytest

from loopguard.errors import InputError
from loopguard.findings import Finding
from loopguard.replay.transcripts import (
    AssistantMessage,
    Compaction,
    SystemMessage,
    ToolResult,
    UserMessage,
    open_transcript,
)

SAMPLES = Path(__file__).parent / "agent_samples"


def digest(path: Path | str, fmt: str | None = None) -> list[tuple[Any, ...]]:
    """The event stream as short tuples: ("user", text), ("calls", [(name, args)]),
    ("result", id, error), ("compaction",), ("system",), ("warning", code)."""
    out: list[tuple[Any, ...]] = []
    for event in open_transcript(str(path), fmt).events():
        if isinstance(event, UserMessage):
            out.append(("user", event.session, event.text[:12]))
        elif isinstance(event, AssistantMessage):
            out.append(("calls", event.session, [(c.name, c.arguments) for c in event.tool_calls]))
        elif isinstance(event, ToolResult):
            out.append(("result", event.call_id, event.is_error))
        elif isinstance(event, Compaction):
            out.append(("compaction",))
        elif isinstance(event, SystemMessage):
            out.append(("system",))
        elif isinstance(event, Finding):
            out.append(("warning", event.code))
    return out


def calls(path: Path | str) -> list[list[str]]:
    """Per model response with calls: the tool names, in order."""
    return [
        [name for name, _ in item[2]] for item in digest(path) if item[0] == "calls" and item[2]
    ]


@pytest.mark.parametrize(
    "name,fmt",
    [
        ("claude-code.jsonl", "claude-code"),
        ("claude-code-truncated.jsonl", "claude-code"),
        ("codex.jsonl", "codex"),
        ("codex-legacy.jsonl", "codex"),
        ("gemini-checkpoint.json", "gemini"),
        ("gemini-contents.json", "gemini"),
        ("swe-agent-text.traj", "swe-agent"),
        ("swe-agent-fc.traj", "swe-agent"),
        ("mini-swe-agent-v1.traj.json", "mini-swe-agent"),
        ("mini-swe-agent-v2.traj.json", "mini-swe-agent"),
        ("mini-swe-agent-v2-text.traj.json", "mini-swe-agent"),
        ("tau-bench-results.json", "tau-bench"),
        ("openhands-trajectory.json", "openhands"),
        ("openhands-output.jsonl", "openhands"),
    ],
)
def test_each_sample_is_detected_from_its_content(name: str, fmt: str) -> None:
    assert open_transcript(str(SAMPLES / name)).format == fmt


def test_claude_code_merges_the_lines_of_one_response_and_moves_late_results_back() -> None:
    events = digest(SAMPLES / "claude-code.jsonl")
    main = "s-1"  # the lines' sessionId, not the path (issue 24, item 18)
    mine = [e for e in events if e[1:2] != ("s-1/agent-a77",) and e != ("result", "toolu_9", False)]
    assert mine == [
        ("user", main, "Why does the"),
        (
            "calls",
            main,
            [("Read", {"file_path": "build.log"}), ("Read", {"file_path": "config.toml"})],
        ),
        ("result", "toolu_1", False),
        ("result", "toolu_2", False),  # toolu_2 answered after msg_B began
        ("calls", main, [("Bash", {"command": "make"})]),
        ("result", "toolu_3", True),
        ("compaction",),
        ("user", main, "This session"),
        ("calls", main, [("Bash", {"command": "make"})]),
        ("result", "toolu_4", False),
        ("calls", main, []),
    ]


def test_claude_code_sidechain_lines_are_a_session_of_their_own() -> None:
    side = "s-1/agent-a77"  # the parent's sessionId and the sub-agent's agentId
    assert [e for e in digest(SAMPLES / "claude-code.jsonl") if len(e) > 1 and e[1] == side] == [
        ("user", side, "Find the Mak"),
        ("calls", side, [("Grep", {"pattern": "^all:"})]),
    ]


def test_claude_code_truncated_last_line_is_a_warning_and_the_rest_is_read() -> None:
    events = digest(SAMPLES / "claude-code-truncated.jsonl")
    assert ("warning", "truncated-line") in events
    assert calls(SAMPLES / "claude-code-truncated.jsonl") == [["Read"]]


def test_codex_rollout() -> None:
    codex_id = "0199a000-0000-7000-8000-000000000001"  # session_meta's id (issue 24, item 18)
    assert digest(SAMPLES / "codex.jsonl") == [
        ("system",),
        ("user", codex_id, "Run the test"),
        (
            "calls",
            codex_id,
            [
                ("shell", {"command": ["bash", "-lc", "pytest -q"]}),
                ("shell", {"command": ["bash", "-lc", "git status"]}),
            ],
        ),
        ("result", "call_1", False),
        ("result", "call_2", False),
        (
            "calls",
            codex_id,
            [("apply_patch", "*** Begin Patch\n*** End Patch")],
        ),
        ("result", "call_3", False),
        ("compaction",),
        (
            "calls",
            codex_id,
            [("local_shell", {"type": "exec", "command": ["pytest", "-q"]})],
        ),
        ("result", "call_4", True),
        ("calls", codex_id, []),
    ]


def test_codex_legacy_rollout() -> None:
    assert calls(SAMPLES / "codex-legacy.jsonl") == [["shell"]]
    assert not [e for e in digest(SAMPLES / "codex-legacy.jsonl") if e[0] == "warning"]


def test_gemini_parallel_calls_without_ids_are_answered_in_order_and_errors_fail() -> None:
    events = digest(SAMPLES / "gemini-checkpoint.json")
    assert [e[0] for e in events].count("user") == 2  # function responses start no turn
    assert calls(SAMPLES / "gemini-checkpoint.json") == [["read_file", "read_file"], ["replace"]]
    results = [e for e in events if e[0] == "result"]
    assert results == [
        ("result", "call@6.2", False),
        ("result", "call@6.3", False),
        ("result", "g7", True),
    ]


def test_gemini_cut_off_document_is_an_error_after_what_was_read() -> None:
    seen: list[Any] = []
    with pytest.raises(InputError) as caught:
        for event in open_transcript(str(SAMPLES / "gemini-broken.json")).events():
            seen.append(event)
    assert caught.value.findings[0].line == 4 and "invalid JSON" in caught.value.findings[0].message
    assert any(isinstance(e, AssistantMessage) and e.tool_calls for e in seen)


def test_swe_agent_text_actions_are_one_bash_call_each() -> None:
    events = digest(SAMPLES / "swe-agent-text.traj")
    assert [e for e in events if e[0] in ("user", "system")] == [
        ("system",),
        ("system",),
        ("user", str(SAMPLES / "swe-agent-text.traj"), "We're curren"),
    ]
    assert [
        e[2] for e in events if e[0] == "calls"
    ] == [  # the blank action and exit_cost are no calls
        [("bash", {"command": "open src/app.py"})],
        [("bash", {"command": "python src/app.py"})],
        [("bash", {"command": "python src/app.py"})],
    ]


def test_swe_agent_function_calling_history_keeps_the_batch(tmp_path: Path) -> None:
    assert calls(SAMPLES / "swe-agent-fc.traj") == [["find_file", "open"], ["submit"]]
    packed = tmp_path / "run.traj.gz"
    with open(SAMPLES / "swe-agent-fc.traj", "rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    assert calls(packed) == [["find_file", "open"], ["submit"]]


def test_cut_off_gzip_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    packed = tmp_path / "run.traj.gz"
    packed.write_bytes(gzip.compress((SAMPLES / "swe-agent-fc.traj").read_bytes())[:200])
    with pytest.raises(InputError) as caught:
        list(open_transcript(str(packed)).events())
    assert caught.value.findings[0].code in ("bad-gzip", "bad-json")


def test_mini_swe_agent_v1_text_actions() -> None:
    events = digest(SAMPLES / "mini-swe-agent-v1.traj.json")
    assert calls(SAMPLES / "mini-swe-agent-v1.traj.json") == [["bash"], ["bash"], ["bash"]]
    assert [e[0] for e in events].count("user") == 1  # observations and format errors are no turns
    assert not [e for e in events if e[0] == "warning"]


def test_mini_swe_agent_v2_exit_answers_the_submitting_call() -> None:
    events = digest(SAMPLES / "mini-swe-agent-v2.traj.json")
    assert calls(SAMPLES / "mini-swe-agent-v2.traj.json") == [["bash", "bash"], ["bash"], ["bash"]]
    assert [e for e in events if e[0] == "result"] == [
        ("result", "call_00_a", False),
        ("result", "call_01_b", False),
        ("result", "call_00_c", True),  # the tool-call error feedback
        ("result", "call_00_d", False),
    ]  # answered by the exit message
    assert ("warning", "bad-arguments") in events


def test_mini_swe_agent_v2_text_mode_uses_extra_actions() -> None:
    assert calls(SAMPLES / "mini-swe-agent-v2-text.traj.json") == [["bash"], ["bash"]]


def test_tau_bench_runs_are_sessions_and_react_actions_are_calls() -> None:
    events = digest(SAMPLES / "tau-bench-results.json")
    batches = [(e[1], [n for n, _ in e[2]]) for e in events if e[0] == "calls" and e[2]]
    assert batches == [
        ("task4-trial0", ["get_user_details", "get_reservation_details"]),
        ("task4-trial1", ["get_reservation_details"]),
    ]
    assert ("warning", "empty-run") in events


def test_openhands_actions_of_one_response_are_one_batch() -> None:
    events = digest(SAMPLES / "openhands-trajectory.json")
    assert calls(SAMPLES / "openhands-trajectory.json") == [
        ["execute_bash", "str_replace_editor"],
        ["execute_bash"],
    ]
    assert ("compaction",) in events and ("result", "toolu_03", True) in events
    assert [e[0] for e in events].count("user") == 1


def test_openhands_evaluation_output_has_one_session_per_instance() -> None:
    sessions = {e[1] for e in digest(SAMPLES / "openhands-output.jsonl") if e[0] == "calls"}
    assert sessions == {"repo__proj-1", "repo__proj-2"}


@pytest.mark.parametrize(
    "fmt,text",
    [
        ("claude-code", '{"type": "user"}\n{"type": "assistant", "message": "x"}\n'),
        ("codex", '{"type": "response_item", "payload": 3}\n{"type": "response_item"}\n'),
        ("openhands", '[{"action": "run", "args": "no"}, {"observation": "run", "cause": 99}, 7]'),
        (
            "tau-bench",
            '[{"task_id": 1, "traj": [1, {"role": "user", "content": "hi"}]}, {"no": "traj"}]',
        ),
        (
            "mini-swe-agent",
            '{"messages": [5, {"role": "robot"}, {"role": "assistant", "tool_calls": [{"x": 1}]}]}',
        ),
        ("swe-agent", '{"trajectory": [{"observation": "x"}], "history": [3]}'),
        (
            "gemini",
            '[{"role": "model", "parts": [{"functionCall": {"args": {}}}]}, '
            '{"role": "robot", "parts": []}]',
        ),
    ],
)
def test_odd_elements_are_warnings_not_tracebacks(tmp_path: Path, fmt: str, text: str) -> None:
    path = tmp_path / "odd.json"
    path.write_text(text)
    events = digest(path, fmt)
    assert any(e[0] == "warning" for e in events), events


@pytest.mark.parametrize("fmt", ["swe-agent", "mini-swe-agent", "tau-bench", "openhands"])
def test_a_document_of_the_wrong_shape_is_an_error(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "wrong.json"
    path.write_text('{"something": "else"}')
    with pytest.raises(InputError) as caught:
        list(open_transcript(str(path), fmt).events())
    assert caught.value.findings[0].code == "wrong-shape" and caught.value.findings[0].hint
