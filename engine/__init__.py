"""loopguard: keeps LLM agents out of tool-call loops.

Public API (see README): `Guard`, `Session`, `Decision`, `Vote`,
`TurnExpectation`, `RoundOutcome`, `run_turn`, `arun_turn`, `TurnResult`,
and `hookimpl` for detector plugins. `loopguard.session.answers` holds the texts the model
sees; `loopguard.integrations.<framework>` the framework adapters (docs/integrations.md).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from loopguard.decision import Decision, Vote
from loopguard.detection.detector import Detector
from loopguard.detection.hookspecs import hookimpl
from loopguard.errors import InputError, LoopguardError, RulesError
from loopguard.findings import Finding
from loopguard.session.guard import Guard
from loopguard.session.session import Session
from loopguard.state.history import Call, HistoryEntry, SessionState
from loopguard.state.store import MemoryStore, SessionStore
from loopguard.state.turn import RoundOutcome, TurnExpectation

if (
    TYPE_CHECKING
):  # imported on first use at run time (see __getattr__); type checkers see them here
    from loopguard.runtime.loop import TurnEvent, TurnResult, arun_turn, run_turn

__all__ = [
    "Call",
    "Decision",
    "Detector",
    "Finding",
    "Guard",
    "HistoryEntry",
    "InputError",
    "LoopguardError",
    "MemoryStore",
    "RoundOutcome",
    "RulesError",
    "Session",
    "SessionState",
    "SessionStore",
    "TurnEvent",
    "TurnExpectation",
    "TurnResult",
    "Vote",
    "arun_turn",
    "hookimpl",
    "run_turn",
]
__version__ = "0.1.0"

# A library logs, the host decides where it goes: without this, Python's last-resort
# handler would print every warning decision to stderr.
logging.getLogger("loopguard").addHandler(logging.NullHandler())


def __getattr__(name: str) -> object:
    """The runtime is imported on first use: it is not needed to guard calls, and importing it
    eagerly (asyncio with it) would add about a tenth to `import loopguard`."""
    if name in ("run_turn", "arun_turn", "TurnResult", "TurnEvent"):
        from loopguard.runtime import loop as runtime

        return getattr(runtime, name)
    raise AttributeError(f"module 'loopguard' has no attribute {name!r}")
