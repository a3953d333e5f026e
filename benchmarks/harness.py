"""Timing helpers: every figure is a ratio to a baseline measured in the same run.

`best_pair()` runs the baseline and the subject alternately, several times, and
keeps the best time of each, so drift on a shared machine hits both alike; `best_by_chunk()`
does the same chunk by chunk of a trace. Times are
the process's CPU time unless a caller asks for the wall clock: on a loaded machine the
wall clock also counts the time the process waited for a processor, which says nothing
about either side.
"""

from __future__ import annotations

import gc
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from hashlib import blake2b
from typing import Any

_dumps = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Collect once and freeze what is alive (traces, guards, modules) for the block: the
    collection before each timed piece then walks only what was made since. A full collection
    before every 250-call chunk was half of the per-call group's run time."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def best_pair(
    baseline: Callable[[], Any],
    subject: Callable[[], Any],
    repeats: int,
    clock: Callable[[], float] = time.process_time,
) -> tuple[float, float]:
    """Best time of each by `clock` (CPU time; the wall clock where waiting on a server or a
    disk is the cost), measured interleaved."""
    best_base = best_subject = float("inf")
    with frozen_heap():
        for _ in range(repeats):
            for which in (0, 1):
                fn = baseline if which == 0 else subject
                gc.collect()
                gc.disable()
                try:
                    start = clock()
                    fn()
                    elapsed = clock() - start
                finally:
                    gc.enable()
                if which == 0:
                    best_base = min(best_base, elapsed)
                else:
                    best_subject = min(best_subject, elapsed)
    return best_base, best_subject


def best_by_chunk(
    trace: list[Any],
    chunk: int,
    repeats: int,
    baseline: Callable[[list[Any]], Any],
    start: Callable[[], Callable[[list[Any], int], Any]],
    clock: Callable[[], float] = time.process_time,
) -> tuple[float, float]:
    """(baseline, subject) times of a whole trace: the sums over its chunks of each chunk's
    best time, the baseline and the subject taking turns chunk by chunk, `repeats` times.

    `start()` begins a repeat (a fresh session) and returns the subject, called with each
    chunk and the index of its first item in order. Keeping the best time per chunk rather
    than per whole run keeps a busy moment from spoiling a whole repeat.
    """
    pieces = [trace[i : i + chunk] for i in range(0, len(trace), chunk)]
    best_base = [float("inf")] * len(pieces)
    best_subject = [float("inf")] * len(pieces)
    with frozen_heap():
        for repeat in range(repeats):
            subject = start()
            for k, piece in enumerate(pieces):
                gc.collect()
                gc.disable()
                try:
                    for which in (0, 1) if (repeat + k) % 2 == 0 else (1, 0):
                        begin = clock()
                        if which == 0:
                            baseline(piece)
                            best_base[k] = min(best_base[k], clock() - begin)
                        else:
                            subject(piece, k * chunk)
                            best_subject[k] = min(best_subject[k], clock() - begin)
                finally:
                    gc.enable()
    return sum(best_base), sum(best_subject)


def floor(trace: list[dict[str, Any]]) -> None:
    """The least any guard must do per call: canonical JSON and a digest of args and result."""
    for call in trace:
        blake2b(_dumps(call["args"]).encode(), digest_size=16).digest()
        blake2b(_dumps(call["result"]).encode(), digest_size=16).digest()


class MinimalGuard:
    """The least a Python guard with loopguard's API can do per call: the lower-bound row.

    `before` digests the canonical arguments and, under a lock, numbers the call, records it
    in a bounded history and in the map of open calls, and asks one detector (a count of
    identical calls: the third is blocked); `after` pairs the result with its call by id and
    digests it, unless the call was blocked. Each returns a decision record. No turns, no
    volatile fields, no outcome rules, no plugins: what is left of loopguard's cost above
    this row is what those cost.
    """

    __slots__ = ("_lock", "_history", "_open", "_counts", "_seq")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._history: deque[list[Any]] = deque(maxlen=30)
        self._open: dict[str, list[Any]] = {}
        self._counts: dict[bytes, int] = {}
        self._seq = 0

    def before(self, tool: str, args: Any, call_id: str) -> tuple[str, str, str, int]:
        canonical = _dumps(args)
        digest = blake2b(f"{tool}\x00{canonical}".encode(), digest_size=16).digest()
        with self._lock:
            self._seq += 1
            count = self._counts[digest] = self._counts.get(digest, 0) + 1
            action = "allow" if count < 3 else "critical"
            entry = [self._seq, tool, digest, None if action == "allow" else b"veto"]
            self._history.append(entry)
            self._open[call_id] = entry
            return (action, tool, call_id, self._seq)

    def after(self, tool: str, result: Any, call_id: str) -> tuple[str, str, str, int]:
        with self._lock:
            entry = self._open.pop(call_id, None)
            if entry is None or entry[3] is not None:  # unknown, or blocked: result unused
                return ("allow", tool, call_id, 0 if entry is None else entry[0])
            entry[3] = blake2b(_dumps(result).encode(), digest_size=16).digest()
            return ("allow", tool, call_id, entry[0])


def minimal_guard() -> Callable[[list[dict[str, Any]], int], None]:
    """A fresh `MinimalGuard` driven like `run.drive_from` (the lower-bound subject)."""
    guard = MinimalGuard()

    def drive(trace: list[dict[str, Any]], first: int) -> None:
        for i, call in enumerate(trace, first):
            cid = f"c{i}"
            guard.before(call["tool"], call["args"], cid)
            guard.after(call["tool"], call["result"], cid)

    return drive
