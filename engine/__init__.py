"""loopguard: keeps LLM agents out of tool-call loops.

Public API (see README): `Guard`, `Session`, `Decision`, `Vote`,
`TurnExpectation`, `RoundOutcome`, `run_turn`, `arun_turn`, `TurnResult`,
and `hookimpl` for detector plugins. `loopguard.session.answers` holds the texts the model
sees; `loopguard.integrations.<framework>` the framework adapters (docs/integrations.md).
"""

from __future__ import annotations

import logging

from loopguard.decision import Decision, Vote
from loopguard.detection.detector import Detector
from loopguard.errors import InputError, LoopguardError, RulesError
from loopguard.findings import Finding
from loopguard.session.guard import Guard
from loopguard.state.history import Call, HistoryEntry, SessionState
from loopguard.detection.hookspecs import hookimpl
from loopguard.session.session import Session
from loopguard.state.store import MemoryStore, SessionStore
from loopguard.state.turn import RoundOutcome, TurnExpectation

__all__ = [
    "Call", "Decision", "Detector", "Finding", "Guard", "HistoryEntry", "InputError",
    "LoopguardError", "MemoryStore", "RoundOutcome", "RulesError", "Session", "SessionState",
    "SessionStore", "TurnExpectation", "Vote", "hookimpl",
]
__version__ = "0.1.0"

# A library logs, the host decides where it goes: without this, Python's last-resort
# handler would print every warning decision to stderr.
logging.getLogger("loopguard").addHandler(logging.NullHandler())


def __getattr__(name: str) -> object:
    """The runtime is imported on first use (it is not needed to guard calls)."""
    if name in ("run_turn", "arun_turn", "TurnResult", "TurnEvent"):
        from loopguard.runtime import loop as runtime

        return getattr(runtime, name)
    raise AttributeError(f"module 'loopguard' has no attribute {name!r}")
