"""Session memory does not grow with argument size (docs/limits.md): history entries hold
digests only; only the fuzzy detector keeps more, and only for its window (docs/detection.md).

Measured with tracemalloc (bytes still allocated after the calls, arguments released).
"""

from __future__ import annotations

import gc
import random
import sys
import tracemalloc

import pytest

import loopguard

pytestmark = pytest.mark.slow  # thousands of calls under tracemalloc


def text(size: int, seed: int) -> str:
    """Deterministic text of `size` characters, different for every seed."""
    return random.Random(seed).randbytes(size // 2 + 1).hex()[:size]


def retained(guard: loopguard.Guard, size: int, calls: int, session_id: str) -> int:
    """Bytes a session keeps after `calls` completed calls with `size`-character arguments."""
    session = guard.session(session_id)
    session.begin_turn([])
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for i in range(calls):
            args = {"content": text(size, i)}
            session.before_call("write", args, call_id=str(i))
            session.after_call(
                "write", args, result={"ok": True, "echo": args["content"]}, call_id=str(i)
            )
            del args
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()


def warmed(rules: dict[str, object]) -> loopguard.Guard:
    guard = loopguard.Guard.from_dict({"version": 1, "loop_detection": {"enabled": True}, **rules})
    retained(guard, 100, 5, "warm-up")  # compile the policy, fill caches
    return guard


def test_history_memory_does_not_grow_with_argument_size() -> None:
    guard = warmed({"detectors": {"doom_loop_fuzzy": {"enabled": False}}})
    small = retained(guard, 100, 30, "small")
    large = retained(guard, 200_000, 30, "large")  # 6 MB of arguments and as much of results
    assert large < 200_000  # less than a single argument
    assert large - small < 8 * 1024


def test_the_fuzzy_window_bounds_what_it_keeps() -> None:
    guard = warmed({})
    six = retained(guard, 50_000, 6, "six")
    thirty = retained(guard, 50_000, 30, "thirty")  # 1.5 MB of distinct long arguments
    assert thirty < 1.5 * six + 16 * 1024
    assert thirty < 500_000  # a third of the arguments it saw


def test_history_entries_hold_digests_not_arguments() -> None:
    guard = warmed({})
    session = guard.session("s")
    content = text(20_000, 1)
    session.before_call("write", {"content": content}, call_id="1")
    session.after_call("write", {"content": content}, result=content, call_id="1")
    (entry,) = session.history()
    for name in ("seq", "tool", "digest", "outcome", "run_id", "turn", "call_id"):
        value = getattr(entry, name)
        assert sys.getsizeof(value) < 200, name
    assert content[:50] not in repr(entry.to_dict())
