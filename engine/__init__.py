"""loopguard: keeps LLM agents out of tool-call loops.

Public API (see README): `Guard`, `Session`, `Decision`, `Vote`,
`TurnExpectation`, `RoundOutcome`, `run_turn`, `arun_turn`, `TurnResult`,
and `hookimpl` for detector plugins. `loopguard.answers` holds the texts the model
sees; `loopguard.integrations.<framework>` the framework adapters (docs/integrations.md).
"""

from __future__ import annotations

import logging

from .decision import Decision, Vote
from .detector import Detector
from .errors import InputError, LoopguardError, RulesError
from .findings import Finding
from .guard import Guard
from .history import Call, HistoryEntry, SessionState
from .hookspecs import hookimpl
from .session import Session
from .store import MemoryStore, SessionStore
from .turns import RoundOutcome, TurnExpectation

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
        from . import runtime

        return getattr(runtime, name)
    raise AttributeError(f"module 'loopguard' has no attribute {name!r}")
