"""The remembered no-progress streak equals a fresh walk, through any order of completions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_fakes import BUILTINS

import loopguard
from loopguard.state.history import VETO, Bucket, HistoryEntry


def walk(entries: list[HistoryEntry]) -> tuple[int, tuple[int, ...]]:
    """The walk: newest to oldest, skip pending, first outcome is the reference, vetoes equal."""
    reference, seqs = None, []
    for entry in reversed(entries):
        if entry.outcome is None:
            continue
        if entry.outcome != VETO:
            if reference is None:
                reference = entry.outcome
            elif entry.outcome != reference:
                break
        seqs.append(entry.seq)
    return len(seqs), tuple(reversed(seqs))


action = st.one_of(
    st.tuples(st.just("add"), st.sampled_from([b"ok:a", b"ok:a", b"ok:b", VETO, None])),
    st.tuples(st.just("complete"), st.sampled_from([b"ok:a", b"ok:b"])),
    st.tuples(st.just("evict"), st.none()),
    st.tuples(st.just("check"), st.none()),
)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(actions=st.lists(action, max_size=60))
def test_bucket_streak_matches_the_walk(actions: list[tuple[str, bytes | None]]) -> None:
    bucket = Bucket()
    seq = 0
    first = 1
    for kind, value in actions:
        if kind == "add":
            seq += 1
            entry = HistoryEntry(seq, "t", b"d", None, 1, None)
            entry.outcome = value
            bucket.entries.append(entry)
        elif kind == "complete":  # the oldest pending call gets its result
            pending = [e for e in bucket.entries if e.outcome is None]
            if pending:
                pending[0].outcome = value
        elif kind == "evict" and bucket.entries:
            first = bucket.entries.pop(0).seq + 1
        assert bucket.streak(first) == walk(bucket.entries)


# -- a streak whose oldest vetoes left the history (the shared-store test's flake) ---------
ONLY_GENERIC = {name: {"enabled": False} for name in BUILTINS if name != "generic_repeat"}


def test_bucket_keeps_the_vetoes_still_held_when_progress_follows() -> None:
    # ok:a and four vetoes; ok:a and the first veto leave the history (the seqs are
    # trimmed, the veto count is not); then ok:b: the walk keeps the three vetoes still
    # held, where `seqs[len(seqs) - vetoes:]` (a negative start) kept one.
    bucket = Bucket()
    entries = [HistoryEntry(seq, "t", b"d", None, 1, None) for seq in range(1, 8)]
    for entry, outcome in zip(
        entries, [b"ok:a", VETO, VETO, VETO, VETO, b"ok:b", b"ok:b"], strict=True
    ):
        entry.outcome = outcome
    bucket.entries = entries[:5]
    assert bucket.streak(1) == (5, (1, 2, 3, 4, 5))
    del bucket.entries[:2]
    assert bucket.streak(3) == (3, (3, 4, 5))
    bucket.entries += entries[5:]
    assert bucket.streak(3) == walk(bucket.entries) == (5, (3, 4, 5, 6, 7))


def test_a_session_kept_in_memory_counts_like_a_fresh_walk() -> None:
    # Failed once in tests/test_stores_redis.py: a worker that read the state from the
    # store (streak rebuilt from the history) vetoed a call the in-memory replay allowed.
    guard = loopguard.Guard.from_dict(
        {
            "version": 1,
            "detectors": ONLY_GENERIC,
            "aggregator": {"escalate_criticals": 0},
            "loop_detection": {
                "enabled": True,
                "history_size": 9,
                "warning_threshold": 3,
                "critical_threshold": 5,
            },
        }
    )
    session = guard.session("s")
    actions: list[str] = []

    def call(tool: str, args: dict[str, Any], result: str) -> None:
        n = len(actions)
        decision = session.before_call(tool, args, call_id=f"c{n}")
        if not decision.blocked:
            session.after_call(tool, args, result=result, call_id=f"c{n}")
        actions.append(decision.action)

    a = {"path": "a"}
    for _ in range(6):
        call("read", a, "one")  # 1-5: the same result; 6: vetoed (5 without progress)
    for i in range(3):
        call("list", {"i": i}, "x")  # 7-9
    for _ in range(3):
        call("read", a, "one")  # 10-12: vetoed
    for i in range(3, 6):
        call("list", {"i": i}, "x")  # 13-15: 1-6 have left the history
    for _ in range(2):
        call("read", a, "two")  # 16 (3 vetoes held: allowed, progress), 17 (4)
    assert actions == (
        ["allow"] * 3
        + ["warn"] * 2
        + ["critical"]
        + ["allow"] * 3
        + ["critical"] * 3
        + ["allow"] * 3
        + ["warn"] * 2
    )
    decision = session.before_call("read", a, call_id="last")  # 17, 16, 12, 11, 10
    assert decision.action == "critical"
    assert [(v.detector, v.count, v.evidence) for v in decision.votes] == [
        ("generic_repeat", 5, (10, 11, 12, 16, 17))
    ]


def test_a_streak_asked_again_is_the_same_until_an_entry_comes_or_leaves() -> None:
    # generic_repeat and global_circuit_breaker ask about the same call: the second is
    # answered from the first; any change of the entries (here one leaving and one coming,
    # the count unchanged, asked with the same first_seq as a plugin may) is walked again.
    bucket = Bucket()
    entries = [HistoryEntry(seq, "t", b"d", None, 1, None) for seq in range(1, 5)]
    for entry, outcome in zip(entries, [b"ok:a", b"ok:a", VETO, b"ok:b"], strict=True):
        entry.outcome = outcome
    bucket.entries = entries[:3]
    first = bucket.streak(0)
    assert first == (3, (1, 2, 3))
    assert bucket.streak(0) is first
    del bucket.entries[0]
    bucket.entries.append(entries[3])
    assert bucket.streak(0) == walk(bucket.entries) == (2, (3, 4))
    pending = HistoryEntry(5, "t", b"d", None, 1, None)
    bucket.entries.append(pending)
    assert bucket.streak(0) == (2, (3, 4))
    pending.outcome = b"ok:b"  # (a pending entry's outcome lands: never answered from before)
    assert bucket.streak(0) == walk(bucket.entries) == (3, (3, 4, 5))
