"""Sessions are safe to share between threads, and the default store is bounded.

No timing is asserted: threads start together on a barrier and the checks are about what was
recorded. The store's clock is replaced by a counter to make idleness deterministic.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from helpers import Clock, rolling_guard

import loopguard

THREADS = 8
CALLS = 150


def run_threads(work: Callable[[int], None]) -> None:
    """Run `work(thread_index)` in THREADS threads started together; re-raise any error."""
    barrier = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def body(index: int) -> None:
        try:
            barrier.wait()
            work(index)
        except BaseException as exc:  # noqa: BLE001 — reported below
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors


def test_eight_threads_on_one_session_lose_no_history_entry() -> None:
    guard = rolling_guard(loop={"history_size": THREADS * CALLS * 2})
    session = guard.session("shared")

    def work(index: int) -> None:
        for i in range(CALLS):
            args = {"thread": index, "i": i}
            cid = f"{index}-{i}"
            session.before_call("read", args, call_id=cid)
            session.after_call("read", args, result={"n": i}, call_id=cid)

    run_threads(work)
    history = session.history()
    assert len(history) == THREADS * CALLS
    assert sorted(e.seq for e in history) == list(range(1, THREADS * CALLS + 1))
    assert len({e.call_id for e in history}) == THREADS * CALLS
    assert not any(e.pending for e in history)


def test_threads_repeating_one_call_keep_the_detectors_consistent() -> None:
    guard = rolling_guard(
        loop={"history_size": THREADS * CALLS * 2}, aggregator={"escalate_criticals": 0}
    )
    session = guard.session("shared")
    decisions: list[loopguard.Decision] = []
    lock = threading.Lock()

    def work(index: int) -> None:
        for i in range(CALLS):
            cid = f"{index}-{i}"
            decision = session.before_call("fetch", {"u": 1}, call_id=cid)
            if not decision.blocked:
                session.after_call("fetch", {"u": 1}, result="same", call_id=cid)
            with lock:
                decisions.append(decision)

    run_threads(work)
    assert len(session.history()) == THREADS * CALLS
    by_seq = sorted(decisions, key=lambda d: d.seq)
    assert [d.seq for d in by_seq] == list(range(1, THREADS * CALLS + 1))
    assert [d.action for d in by_seq[:3]] == ["allow"] * 3
    assert by_seq[-1].action == "breaker"  # the global breaker, once the streak is long


def test_many_sessions_from_many_threads_lose_no_history_entry() -> None:
    guard = rolling_guard()
    per_thread, per_session = 40, 5

    def work(index: int) -> None:
        for s in range(per_thread):
            session = guard.session(f"t{index}-s{s}")
            for i in range(per_session):
                session.before_call("read", {"i": i}, call_id=str(i))
                session.after_call("read", {"i": i}, result="x", call_id=str(i))

    run_threads(work)
    assert len(guard.store) == THREADS * per_thread
    for index in range(THREADS):
        for s in range(per_thread):
            history = guard.session(f"t{index}-s{s}").history()
            assert [e.seq for e in history] == list(range(1, per_session + 1))


def one_call(guard: loopguard.Guard, session_id: str) -> None:
    guard.session(session_id).before_call("read", {"p": 1})


def test_the_store_caps_the_number_of_sessions(clock: Clock) -> None:
    store = loopguard.MemoryStore(max_sessions=3, idle_ttl=None)
    guard = loopguard.Guard.from_dict({"version": 1}, store=store)
    for i in range(6):
        one_call(guard, f"s{i}")
        assert len(store) <= 3
    assert len(store) == 3
    assert len(guard.session("s5").history()) == 1  # the newest survived
    assert guard.session("s0").history() == []  # the oldest was forgotten


def test_the_store_evicts_the_least_recently_used_over_the_cap(clock: Clock) -> None:
    store = loopguard.MemoryStore(max_sessions=3, idle_ttl=None)
    guard = loopguard.Guard.from_dict({"version": 1}, store=store)
    for name in ("a", "b", "c"):
        one_call(guard, name)
    one_call(guard, "a")  # a is used again: b is now the least recently used
    one_call(guard, "d")
    assert len(guard.session("a").history()) == 2
    assert len(store) == 3
    assert guard.session("b").history() == []


def test_the_store_forgets_idle_sessions(clock: Clock) -> None:
    store = loopguard.MemoryStore(max_sessions=100, idle_ttl=60.0)
    guard = loopguard.Guard.from_dict({"version": 1}, store=store)
    one_call(guard, "idle")
    clock.now += 30
    one_call(guard, "recent")
    clock.now += 31  # "idle" is now 61 s old, "recent" 31 s
    one_call(guard, "new")
    assert len(store) == 2
    assert len(guard.session("recent").history()) == 1
    assert guard.session("idle").history() == []


def test_the_store_rejects_a_zero_cap() -> None:
    with pytest.raises(ValueError, match="max_sessions"):
        loopguard.MemoryStore(max_sessions=0)
