"""loopguard: keeps LLM agents out of tool-call loops.

Public API (see README): `Guard`, `Session`, `Decision`, `Vote`,
`TurnExpectation`, `RoundOutcome`, `run_turn`, `arun_turn`, `TurnResult`,
and `hookimpl` for detector plugins. `loopguard.session.answers` holds the texts the model
sees; `loopguard.integrations.<framework>` the framework adapters (docs/integrations.md).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported on first use at run time (see __getattr__)
    from loopguard.decision import Decision, Vote
    from loopguard.detection.detector import Detector
    from loopguard.detection.hookspecs import hookimpl
    from loopguard.errors import InputError, LoopguardError, RulesError
    from loopguard.findings import Finding
    from loopguard.runtime.loop import TurnEvent, TurnResult, arun_turn, run_turn
    from loopguard.session.guard import Guard
    from loopguard.session.session import Session
    from loopguard.state.history import Call, HistoryEntry, SessionState
    from loopguard.state.store import MemoryStore, SessionStore
    from loopguard.state.turn import RoundOutcome, TurnExpectation

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


# where each public name lives; `import loopguard` imports none of them (see __getattr__)
_HOMES = {
    "Decision": "loopguard.decision",
    "Vote": "loopguard.decision",
    "Detector": "loopguard.detection.detector",
    "hookimpl": "loopguard.detection.hookspecs",
    "InputError": "loopguard.errors",
    "LoopguardError": "loopguard.errors",
    "RulesError": "loopguard.errors",
    "Finding": "loopguard.findings",
    "Guard": "loopguard.session.guard",
    "Session": "loopguard.session.session",
    "Call": "loopguard.state.history",
    "HistoryEntry": "loopguard.state.history",
    "SessionState": "loopguard.state.history",
    "MemoryStore": "loopguard.state.store",
    "SessionStore": "loopguard.state.store",
    "RoundOutcome": "loopguard.state.turn",
    "TurnExpectation": "loopguard.state.turn",
    "run_turn": "loopguard.runtime.loop",
    "arun_turn": "loopguard.runtime.loop",
    "TurnResult": "loopguard.runtime.loop",
    "TurnEvent": "loopguard.runtime.loop",
}


def __getattr__(name: str) -> object:
    """Public names load on first use: `loopguard hook` starts a process on every tool call
    of an agent, and the CLI's package import must not pay for the whole engine (about 0.3 s);
    `from loopguard import Guard` works as before."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'loopguard' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
