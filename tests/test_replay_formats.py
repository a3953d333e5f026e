"""The same recorded conversation, written in each of the four formats, gives the same decisions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import loopguard
from loopguard.replay.replayer import DecisionRecord, Replayer, SkippedTool

# One conversation as abstract steps: a skipped required tool (Chinese trigger), a round with
# two calls, a doom loop, a compaction and a redo across three turns.
STEPS: list[tuple] = [
    ("system", "你是投资助手，持仓数据只能通过 portfolio 工具读取。"),
    ("user", "帮我看看持仓"),
    ("assistant", "你的持仓很健康，继续持有即可。", []),
    ("user", "Read the config and list the folder."),
    (
        "assistant",
        "Reading.",
        [("c1", "read_file", {"path": "app.toml"}), ("c2", "list_dir", {"path": "."})],
    ),
    ("result", "c1", "debug = false"),
    ("result", "c2", "app.toml\nsrc"),
    ("assistant", "", [("c3", "read_file", {"path": "app.toml"})]),
    ("result", "c3", "debug = false"),
    ("assistant", "", [("c4", "read_file", {"path": "app.toml"})]),
    ("result", "c4", "debug = false"),
    ("assistant", "debug is off.", []),
    ("compaction",),
    ("user", "continue"),
    ("assistant", "", [("c5", "grep", {"pattern": "timeout", "path": "src"})]),
    ("result", "c5", "no matches"),
    ("user", "continue"),
    ("assistant", "", [("c6", "grep", {"pattern": "timeout", "path": "src"})]),
    ("result", "c6", "no matches"),
    ("user", "continue"),
    ("assistant", "", [("c7", "grep", {"pattern": "timeout", "path": "src"})]),
    ("result", "c7", "no matches"),
    ("assistant", "There is no timeout setting.", []),
]


def as_eventlog() -> str:
    rows: list[dict[str, Any]] = []
    for step in STEPS:
        if step[0] in ("system", "user"):
            rows.append({"event": f"{step[0]}_message", "text": step[1]})
        elif step[0] == "assistant":
            rows.append(
                {
                    "event": "assistant_message",
                    "text": step[1],
                    "tool_calls": [{"id": i, "name": n, "arguments": a} for i, n, a in step[2]],
                }
            )
        elif step[0] == "result":
            rows.append({"event": "tool_result", "call_id": step[1], "content": step[2]})
        else:
            rows.append({"event": "compaction"})
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def as_chat() -> str:
    messages: list[dict[str, Any]] = []
    for step in STEPS:
        if step[0] in ("system", "user"):
            messages.append({"role": step[0], "content": step[1]})
        elif step[0] == "assistant":
            message: dict[str, Any] = {"role": "assistant", "content": step[1] or None}
            if step[2]:
                message["tool_calls"] = [
                    {
                        "id": i,
                        "type": "function",
                        "function": {"name": n, "arguments": json.dumps(a)},
                    }
                    for i, n, a in step[2]
                ]
            messages.append(message)
        elif step[0] == "result":
            messages.append({"role": "tool", "tool_call_id": step[1], "content": step[2]})
        else:
            messages.append({"type": "compaction"})
    return json.dumps(messages, ensure_ascii=False, indent=2)


def as_responses() -> str:
    items: list[dict[str, Any]] = []
    for step in STEPS:
        if step[0] in ("system", "user"):
            part = "input_text"
            items.append(
                {"type": "message", "role": step[0], "content": [{"type": part, "text": step[1]}]}
            )
        elif step[0] == "assistant":
            if step[1]:
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": step[1]}],
                    }
                )
            items += [
                {"type": "function_call", "call_id": i, "name": n, "arguments": json.dumps(a)}
                for i, n, a in step[2]
            ]
        elif step[0] == "result":
            items.append({"type": "function_call_output", "call_id": step[1], "output": step[2]})
        else:
            items.append({"type": "compaction", "encrypted_content": "..."})
    return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items)


def as_anthropic() -> str:
    system = next(step[1] for step in STEPS if step[0] == "system")
    messages: list[dict[str, Any]] = []
    for step in STEPS:
        if step[0] == "user":
            messages.append({"role": "user", "content": step[1]})
        elif step[0] == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": step[1]}] if step[1] else []
            blocks += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in step[2]]
            messages.append({"role": "assistant", "content": blocks})
        elif step[0] == "result":
            block = {
                "type": "tool_result",
                "tool_use_id": step[1],
                "content": step[2],
                "is_error": False,
            }
            last = messages[-1]
            if last["role"] == "user" and isinstance(last["content"], list):
                last["content"].append(block)
            else:
                messages.append({"role": "user", "content": [block]})
        elif step[0] == "compaction":
            messages.append({"type": "compaction"})
    return json.dumps(
        {"model": "claude", "system": system, "messages": messages}, ensure_ascii=False
    )


WRITERS = {
    "eventlog": (as_eventlog, "log.jsonl"),
    "openai-chat": (as_chat, "chat.json"),
    "openai-responses": (as_responses, "responses.jsonl"),
    "anthropic": (as_anthropic, "claude.json"),
}


PORTFOLIO = loopguard.Guard.from_file("builtin:portfolio")  # the reference skips a required tool


def outcome(path: Path) -> tuple[list[tuple], list[tuple]]:
    records = list(Replayer(PORTFOLIO).run([str(path)]))
    decisions = [
        (
            r.decision.seq,
            r.decision.turn,
            r.decision.tool,
            r.decision.phase,
            r.decision.action,
            r.decision.detector,
            tuple(v.to_dict()["evidence"] for v in r.decision.votes),
        )
        for r in records
        if isinstance(r, DecisionRecord)
    ]
    skipped = [(s.turn, s.call, s.problem, s.retry) for s in records if isinstance(s, SkippedTool)]
    return decisions, skipped


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[tuple], list[tuple]]:
    path = tmp_path_factory.mktemp("ref") / "log.jsonl"
    path.write_text(as_eventlog())
    return outcome(path)


def test_reference_conversation_has_the_interesting_decisions(expected: tuple) -> None:
    decisions, skipped = expected
    flagged = [
        (seq, action, detector)
        for seq, _, _, _, action, detector, _ in decisions
        if action != "allow"
    ]
    assert flagged == [(4, "breaker", "doom_loop_exact"), (7, "breaker", "post_compaction_guard")]
    assert skipped == [(1, 'portfolio(mode="diagnose")', "text_only", True)]
    assert len([d for d in decisions if d[3] == "before"]) == 7


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_every_format_gives_the_same_decisions(fmt: str, tmp_path: Path, expected: tuple) -> None:
    write, name = WRITERS[fmt]
    path = tmp_path / name
    path.write_text(write())
    from loopguard.replay.transcripts import open_transcript

    assert open_transcript(str(path)).format == fmt  # detected, not forced
    assert outcome(path) == expected
