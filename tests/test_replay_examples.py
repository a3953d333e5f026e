"""Every example transcript replays with the expected decisions."""

from __future__ import annotations

from pathlib import Path

import pytest

import loopguard
from loopguard import Finding
from loopguard.replay.replayer import DecisionRecord, Replayer, SessionSummary, SkippedTool

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "transcripts"
LOOP_RULES = EXAMPLES / "loop-detection.yaml"


def replay(name: str, rules: Path | None = None, guard: loopguard.Guard | None = None) -> list:
    guard = guard or (loopguard.Guard.from_file(str(rules)) if rules else loopguard.Guard.default())
    return list(Replayer(guard).run([str(EXAMPLES / name)]))


def flagged(records: list, session: str | None = None) -> list[tuple]:
    return [
        (r.decision.seq, r.decision.action, r.decision.detector)
        for r in records
        if isinstance(r, DecisionRecord) and r.index and (session is None or r.session == session)
    ]


def of(records: list, kind: type) -> list:
    return [r for r in records if isinstance(r, kind)]


def test_portfolio_answered_from_imagination() -> None:
    assert (
        of(replay("portfolio-from-imagination.chat.json"), SkippedTool) == []
    )  # default: no intents
    portfolio = loopguard.Guard.from_file("builtin:portfolio")
    records = replay("portfolio-from-imagination.chat.json", guard=portfolio)
    assert flagged(records) == []
    skipped = of(records, SkippedTool)
    assert [(s.turn, s.call, s.problem, s.retry) for s in skipped] == [
        (1, 'portfolio(mode="diagnose")', "text_only", True),
        (
            2,
            'portfolio(mode="diagnose")',
            "other_args",
            True,
        ),  # it called mode=view, which does not count
    ]
    assert skipped[0].line == 12 and 'portfolio(mode="diagnose")' in skipped[0].retry_message
    (summary,) = of(records, SessionSummary)
    assert (summary.turns, summary.calls, summary.skipped, summary.retries) == (3, 2, 2, 2)
    assert of(records, Finding) == []


def test_stuck_poll_with_loop_detection_rules() -> None:
    records = replay("stuck-poll.anthropic.json", LOOP_RULES)
    assert flagged(records) == [
        (5, "warn", "known_poll_no_progress"),
        (6, "warn", "known_poll_no_progress"),
        (7, "warn", "known_poll_no_progress"),
        (8, "critical", "known_poll_no_progress"),
        (9, "breaker", "known_poll_no_progress"),
        (10, "breaker", "known_poll_no_progress"),
    ]
    decisions = {r.decision.seq: r for r in of(records, DecisionRecord) if r.index}
    assert decisions[9].decision.escalated and not decisions[8].decision.escalated
    assert decisions[10].after_breaker and not decisions[9].after_breaker
    (summary,) = of(records, SessionSummary)
    assert (summary.calls, summary.ran_despite_block, summary.after_breaker) == (10, 3, 1)
    assert dict(summary.actions) == {"allow": 4, "warn": 3, "critical": 1, "breaker": 2}


def test_stuck_poll_with_default_rules_trips_the_doom_loop() -> None:
    records = replay("stuck-poll.anthropic.json")
    # a poll: five unchanged results are waited out, the sixth identical poll is blocked
    assert flagged(records)[:2] == [
        (7, "critical", "doom_loop_exact"),
        (8, "breaker", "doom_loop_exact"),
    ]


def test_read_list_ping_pong() -> None:
    records = replay("read-list-ping-pong.chat.jsonl", LOOP_RULES)
    assert flagged(records, "eval-017") == [
        (3, "warn", "ping_pong"),
        (4, "warn", "ping_pong"),
        (5, "critical", "cycle"),
        (6, "breaker", "cycle"),
        (7, "breaker", "cycle"),
    ]
    assert flagged(records, "eval-018") == []
    assert [s.session for s in of(records, SessionSummary)] == ["eval-017", "eval-018"]


def test_redo_after_compaction_is_blocked_before_the_third_redo_runs() -> None:
    records = replay("redo-after-compaction.responses.json")
    (only,) = [r for r in of(records, DecisionRecord) if r.index]
    d = only.decision
    # the same failing patch three times (across turns): blocked before it runs again
    assert (d.seq, d.turn, d.action, d.detector, d.phase) == (
        5,
        4,
        "critical",
        "doom_loop_exact",
        "before",
    )


def test_redo_after_compaction_trips_the_post_compaction_guard() -> None:
    guard = loopguard.Guard.from_dict(
        {"version": 1, "detectors": {"doom_loop_exact": {"enabled": False}}}
    )
    records = replay("redo-after-compaction.responses.json", guard=guard)
    (only,) = [r for r in of(records, DecisionRecord) if r.index]
    d = only.decision
    assert (d.seq, d.turn, d.action, d.detector, d.phase) == (
        5,
        4,
        "breaker",
        "post_compaction_guard",
        "after",
    )
    assert (
        d.top is not None
        and d.top.code == "compaction_loop_persisted"
        and d.top.evidence == (3, 4, 5)
    )
    assert only.line == 140  # the function_call_output item of the third redo


@pytest.mark.parametrize("rules", [None, {"loop_detection": {"enabled": True}}])
def test_long_healthy_session_is_clean(rules: dict | None) -> None:
    guard = loopguard.Guard.from_dict({"version": 1, **rules}) if rules else None
    records = replay("healthy-refactor.eventlog.jsonl", guard=guard)
    assert flagged(records) == [] and of(records, SkippedTool) == [] and of(records, Finding) == []
    (summary,) = of(records, SessionSummary)
    assert (
        summary.calls >= 300 and summary.turns == 40 and summary.actions == {"allow": summary.calls}
    )


def test_each_example_uses_a_different_reader_layout() -> None:
    from loopguard.replay.transcripts import open_transcript

    seen = {
        (t.format, t.layout)
        for t in (
            open_transcript(str(p)) for p in EXAMPLES.iterdir() if p.suffix in (".json", ".jsonl")
        )
    }
    assert seen == {
        ("openai-chat", "document"),
        ("anthropic", "document"),
        ("openai-chat", "jsonl"),
        ("openai-responses", "document"),
        ("eventlog", "jsonl"),
    }
