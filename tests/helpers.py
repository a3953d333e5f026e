"""Plain helpers the detector and engine tests import: small thresholds and call shortcuts.

Rolling-detector tests use warning 3 / critical 5 / breaker 8 / unknown-tool 3 and turn the
doom-loop detectors off (they would trip at 3 identical calls in one turn and hide what is
being tested). Fixtures and pytest hooks live in conftest.py; importable code lives here.
"""

from __future__ import annotations

import os
import shutil
from itertools import count
from pathlib import Path
from typing import Any

import loopguard

_CALL_IDS = count(1)

UNSET = object()  # leave `loop_detection.enabled` out of the rules
PENDING = object()  # make the call but never report its result
SMALL = {
    "warning_threshold": 3,
    "critical_threshold": 5,
    "global_circuit_breaker_threshold": 8,
    "unknown_tool_threshold": 3,
    "history_size": 200,
}
NO_DOOM = {
    "doom_loop_exact": {"enabled": False},
    "doom_loop_fuzzy": {"enabled": False},
    "cycle": {"enabled": False},
}
# The doom-loop detectors as the Chinese seed writes them (what builtin:portfolio uses): arguments
# only, the window restarts each turn, a breaker.
SPEC_DOOM = {"outcome": "any", "scope": "turn", "window": 6, "level": "breaker"}


def guard_from(**blocks: Any) -> loopguard.Guard:
    """A guard from rule blocks over builtin:default (`guard_from(detectors={...})`)."""
    return loopguard.Guard.from_dict({"version": 1, **blocks})


def rolling_guard(
    enabled: Any = True,
    loop: dict[str, Any] | None = None,
    detectors: dict[str, Any] | None = None,
    **blocks: Any,
) -> loopguard.Guard:
    """Small thresholds, doom-loop detectors off; `enabled=UNSET` leaves the switch unset."""
    block: dict[str, Any] = {**SMALL, **(loop or {})}
    if enabled is not UNSET:
        block["enabled"] = enabled
    return guard_from(loop_detection=block, detectors={**NO_DOOM, **(detectors or {})}, **blocks)


def call(
    session: loopguard.Session,
    tool: str,
    args: Any = None,
    result: Any = "same",
    *,
    error: Any = None,
    run_id: Any = None,
    call_id: Any = None,
) -> loopguard.Decision:
    """before_call, then (unless blocked or PENDING) after_call; returns the before decision.

    Every call gets a fresh call id unless one is given, as providers do, so a PENDING call
    stays unanswered instead of being matched to a later result of the same tool.
    """
    call_id = f"call-{next(_CALL_IDS)}" if call_id is None else call_id
    decision = session.before_call(tool, args, call_id=call_id, run_id=run_id)
    if not decision.blocked and result is not PENDING:
        session.after_call(
            tool,
            args,
            result=None if error is not None else result,
            error=error,
            call_id=call_id,
            run_id=run_id,
        )
    return decision


def repeat(
    session: loopguard.Session,
    times: int,
    tool: str,
    args: Any = None,
    result: Any = "same",
    **kwargs: Any,
) -> list[loopguard.Decision]:
    """The same call `times` times; the list of before decisions."""
    return [call(session, tool, args, result, **kwargs) for _ in range(times)]


def vote_of(decision: loopguard.Decision, detector: str) -> loopguard.Vote | None:
    """The vote a detector cast on a decision, if any."""
    return next((v for v in decision.votes if v.detector == detector), None)


def actions(decisions: list[loopguard.Decision]) -> list[str]:
    return [d.action for d in decisions]


class Clock:
    """A monotonic clock that moves only when told to (and a tick on every reading).

    The `clock` fixture (conftest.py) puts one in place of `time.monotonic`.
    """

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 0.001
        return self.now


def server_pids(run: Path) -> set[int]:
    """The hook servers whose socket lives under `run` (read from /proc)."""
    marker = str(run).encode()
    found = set()
    for proc in Path("/proc").iterdir():
        try:
            line = (proc / "cmdline").read_bytes() if proc.name.isdigit() else b""
            if marker in line and b"loopguard.hooks.server" in line:
                found.add(int(proc.name))
        except OSError:
            pass
    return found


def stop_servers(run: Path, remove: bool = True) -> None:
    """End the hook servers a test started under `run` (they would also end by themselves when
    idle, up to 10 minutes later) and, unless told not to, remove the folder."""
    for pid in server_pids(run):
        try:
            os.kill(pid, 15)
        except OSError:
            pass
    if remove:
        shutil.rmtree(run, ignore_errors=True)
