"""Every decision record of a replay carries the call's number in its session (issue 24, item 15).

Calls of a batch a breaker closed are answered `tools_closed` before the session numbers
them; their records used to say `seq: 0`, so a consumer sorting by `seq` put them first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopguard.cli import main


def batches(rounds: int, size: int, last_answered: bool = True) -> list[dict]:
    """One user turn, then `rounds` responses of `size` identical calls each (all answered,
    or in the last response only its first call)."""
    lines: list[dict] = [{"event": "user_message", "session_id": "s1", "text": "go"}]
    n = 0
    for r in range(rounds):
        calls = []
        for _ in range(size):
            n += 1
            calls.append({"id": f"c{n}", "name": "search", "arguments": {"q": "x"}})
        lines.append({"event": "assistant_message", "session_id": "s1", "tool_calls": calls})
        for call in calls if last_answered or r < rounds - 1 else calls[:1]:
            lines.append(
                {"event": "tool_result", "session_id": "s1", "call_id": call["id"], "content": "0"}
            )
    return lines


def replay_json(tmp_path: Path, lines: list[dict], capsys: pytest.CaptureFixture[str]) -> list:
    path = tmp_path / "batch.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    main(["replay", "--format", "json", str(path)])
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return [r for r in records if r["record"] == "decision"]


def test_tools_closed_answers_carry_their_place_in_the_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    decisions = replay_json(tmp_path, batches(5, 3), capsys)
    closed = [d for d in decisions if d["detector"] == "tools_closed"]
    assert closed, "the scenario must close the tools inside a batch"
    assert all(d["seq"] > 0 for d in decisions)
    before = [d for d in decisions if d["phase"] == "before"]
    assert [d["seq"] for d in before] == sorted(d["seq"] for d in before)
    assert len({d["seq"] for d in before}) == len(before)  # one number per call
    by_id = {d["call_id"]: d["seq"] for d in before}
    assert all(by_id[f"c{n}"] == n for n in (7, 8, 9, 10, 11, 12))  # c<n> is call n


def test_an_unanswered_closed_call_sorts_after_the_call_before_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    decisions = replay_json(tmp_path, batches(5, 3, last_answered=False), capsys)
    last = [d for d in decisions if d["call_id"] in ("c13", "c14", "c15")]
    assert [d["detector"] for d in last] == ["doom_loop_exact", "tools_closed", "tools_closed"]
    assert [d["seq"] for d in last] == [13, 13, 13]  # never numbered: right after call 13
    assert all(d["seq"] > 0 for d in decisions)
    seqs = [d["seq"] for d in decisions]
    assert seqs == sorted(seqs)
