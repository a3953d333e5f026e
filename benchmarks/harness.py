"""Timing helpers: every figure is a ratio to a baseline measured in the same run.

`best_pair()` runs the baseline and the subject alternately, several times, and
keeps the best time of each, so drift on a shared machine hits both alike. Times are
the process's CPU time unless a caller asks for the wall clock: on a loaded machine the
wall clock also counts the time the process waited for a processor, which says nothing
about either side.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable
from hashlib import blake2b
from typing import Any

_dumps = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode


def best_pair(
    baseline: Callable[[], Any],
    subject: Callable[[], Any],
    repeats: int,
    clock: Callable[[], float] = time.process_time,
) -> tuple[float, float]:
    """Best time of each by `clock` (CPU time; the wall clock where waiting on a server or a
    disk is the cost), measured interleaved."""
    best_base = best_subject = float("inf")
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


def floor(trace: list[dict[str, Any]]) -> None:
    """The least any guard must do per call: canonical JSON and a digest of args and result."""
    for call in trace:
        blake2b(_dumps(call["args"]).encode(), digest_size=16).digest()
        blake2b(_dumps(call["result"]).encode(), digest_size=16).digest()
