"""Timing helpers: every figure is a ratio to a baseline measured in the same run.

`compare()` runs the baseline and the subject alternately, several times, and
keeps the best time of each, so drift on a shared machine hits both alike.
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
    baseline: Callable[[], Any], subject: Callable[[], Any], repeats: int
) -> tuple[float, float]:
    """Best wall time of each, measured interleaved."""
    best_base = best_subject = float("inf")
    for _ in range(repeats):
        for which in (0, 1):
            fn = baseline if which == 0 else subject
            gc.collect()
            gc.disable()
            try:
                start = time.perf_counter()
                fn()
                elapsed = time.perf_counter() - start
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
