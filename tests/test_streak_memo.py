"""The remembered no-progress streak equals SPEC §2's walk, through any order of completions."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from loopguard.history import VETO, Bucket, HistoryEntry


def walk(entries: list[HistoryEntry]) -> tuple[int, tuple[int, ...]]:
    """SPEC §2: newest to oldest, skip pending, first outcome is the reference, vetoes equal."""
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
