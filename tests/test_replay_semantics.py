"""Replay semantics: turns, rounds, retries, warnings for odd input, bounded memory."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

import loopguard
from loopguard import Finding
from loopguard.replay.replayer import DecisionRecord, Replayer, SessionSummary, SkippedTool


def write(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    return str(path)


def user(text: str) -> dict[str, Any]:
    return {"event": "user_message", "text": text}


def say(text: str, *calls: tuple[str, str, Any]) -> dict[str, Any]:
    return {
        "event": "assistant_message",
        "text": text,
        "tool_calls": [{"id": i, "name": n, "arguments": a} for i, n, a in calls],
    }


def result(call_id: str, content: Any, error: bool = False) -> dict[str, Any]:
    return {"event": "tool_result", "call_id": call_id, "content": content, "is_error": error}


PORTFOLIO = loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]})


def replay(path: str, guard: Any = None) -> list:
    return list(Replayer(guard or loopguard.Guard.default()).run([path]))


class SpyGuard:
    """Wraps a real guard and records what each session's begin_turn received."""

    def __init__(self) -> None:
        self.guard = PORTFOLIO
        self.turns: list[list[dict[str, Any]]] = []

    def session(self, name: str, agent: str | None = None) -> Any:
        real = self.guard.session(name, agent=agent)
        spy = self

        class Session:
            def __getattr__(self, attr: str) -> Any:
                return getattr(real, attr)

            def begin_turn(self, messages: list[dict[str, Any]]) -> Any:
                spy.turns.append(list(messages))
                return real.begin_turn(messages)

        return Session()


def test_orphan_result_and_unanswered_call_are_warnings(tmp_path: Path) -> None:
    path = write(
        tmp_path / "odd.jsonl",
        [
            user("go"),
            say("", ("a", "read", {"p": 1}), ("b", "read", {"p": 2})),
            result("a", "x"),
            result("zz", "who?"),
            say("done"),
        ],
    )
    records = replay(path)
    warnings = [(f.code, f.line) for f in records if isinstance(f, Finding)]
    assert warnings == [("orphan-result", 4), ("unanswered-call", 2)]
    (summary,) = [r for r in records if isinstance(r, SessionSummary)]
    assert summary.calls == 2 and summary.warnings == 2


def test_errors_are_fed_as_errors(tmp_path: Path) -> None:
    rows = [user("go")]
    for i in range(3):
        rows += [
            say("", (f"c{i}", "deploy", {"env": f"e{i}"})),
            result(f"c{i}", "unknown tool: deploy", True),
        ]
    guard = loopguard.Guard.from_dict(
        {"version": 1, "loop_detection": {"enabled": True, "unknown_tool_threshold": 2}}
    )
    records = replay(write(tmp_path / "err.jsonl", rows), guard)
    flagged = [
        (r.decision.seq, r.decision.detector)
        for r in records
        if isinstance(r, DecisionRecord) and r.index
    ]
    assert flagged == [
        (3, "unknown_tool_repeat")
    ]  # only failures with this error text form the streak


def test_retries_are_counted_until_exhausted(tmp_path: Path) -> None:
    path = write(
        tmp_path / "retry.jsonl",
        [user("帮我看看持仓"), say("都很好"), say("1. 先看看 2. 再分析"), say("")],
    )
    assert [r for r in replay(path) if isinstance(r, SkippedTool)] == []  # default: no intents
    skipped = [r for r in replay(path, PORTFOLIO) if isinstance(r, SkippedTool)]
    assert [(s.problem, s.retry, s.retries) for s in skipped] == [
        ("text_only", True, 1),
        ("plan_only", True, 2),
        ("no_output", False, 2),
    ]


def test_required_tool_called_means_no_skip(tmp_path: Path) -> None:
    path = write(
        tmp_path / "ok.jsonl",
        [
            user("帮我看看持仓"),
            say("", ("p", "portfolio", '{"mode": "diagnose"}')),
            result("p", {"cash": 1}),
            say("体检完成"),
        ],
    )
    assert [r for r in replay(path, PORTFOLIO) if isinstance(r, SkippedTool)] == []


def test_begin_turn_gets_a_bounded_tail_with_the_context(tmp_path: Path) -> None:
    rows = [user("hello")] + [say(f"filler {i}") for i in range(50)]
    rows += [
        user("我的持仓分析一下"),
        say("持仓里有茅台，要看走势分析吗？"),
        user("要"),
        say("好的"),
    ]
    spy = SpyGuard()
    records = replay(write(tmp_path / "ctx.jsonl", rows), spy)
    assert all(len(messages) <= 6 for messages in spy.turns)  # turn.context_messages (4) + 2
    assert spy.turns[-1][-1] == {"role": "user", "content": "要"}
    skipped = [r for r in records if isinstance(r, SkippedTool)]
    assert [s.turn for s in skipped] == [3]  # the affirmative "要" needed the context to trigger


def test_compaction_is_reported_to_the_session(tmp_path: Path) -> None:
    rows = [user("go"), {"event": "compaction"}]
    for i in range(3):
        rows += [say("", (f"c{i}", "build", {})), result(f"c{i}", "failed"), user("again")]
    guard = loopguard.Guard.from_dict(
        {"version": 1, "detectors": {"doom_loop_exact": {"enabled": False}}}
    )
    records = replay(write(tmp_path / "c.jsonl", rows), guard)
    flagged = [r.decision for r in records if isinstance(r, DecisionRecord) and r.index]
    assert [(d.seq, d.detector, d.phase) for d in flagged] == [
        (3, "post_compaction_guard", "after")
    ]


def test_sessions_and_runs_from_the_event_log(tmp_path: Path) -> None:
    rows = []
    for i in range(3):
        for session in ("s1", "s2"):
            rows.append({**user("go"), "session_id": session, "run_id": "r1"})
            rows.append(
                {
                    **say("", (f"{session}{i}", "read", {"p": 0})),
                    "session_id": session,
                    "run_id": "r1",
                }
            )
            rows.append({**result(f"{session}{i}", "same"), "session_id": session})
    rows.append({"event": "session_end", "session_id": "s1"})
    records = replay(write(tmp_path / "multi.jsonl", rows))
    summaries = [r for r in records if isinstance(r, SessionSummary)]
    assert [(s.session, s.calls, s.turns) for s in summaries] == [("s1", 3, 3), ("s2", 3, 3)]
    run_ids = {r.decision.run_id for r in records if isinstance(r, DecisionRecord)}
    assert run_ids == {"r1"}


def long_log(path: Path, calls: int) -> str:
    with path.open("w") as fh:
        for i in range(calls):
            if i % 10 == 0:
                fh.write(json.dumps(user(f"step {i}")) + "\n")
            fh.write(json.dumps(say("", (f"c{i}", "read", {"path": f"f{i}.py"}))) + "\n")
            fh.write(json.dumps(result(f"c{i}", f"content {i}")) + "\n")
    return str(path)


@pytest.mark.slow
def test_replay_memory_does_not_grow_with_length(tmp_path: Path) -> None:
    small, large = long_log(tmp_path / "s.jsonl", 2_000), long_log(tmp_path / "l.jsonl", 20_000)
    peaks = []
    for path in (small, large):
        replayer = Replayer(loopguard.Guard.default())
        tracemalloc.start()
        try:
            calls = sum(r.calls for r in replayer.run([path]) if isinstance(r, SessionSummary))
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        assert calls in (2_000, 20_000)
    assert peaks[1] < peaks[0] * 1.5 + 128 * 1024
