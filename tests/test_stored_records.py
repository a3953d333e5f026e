"""A stored record that decodes is usable everywhere (found by fuzz/state_target.py): a
history entry whose outcome bytes are not an `ok:`/`error:` digest (a planted or damaged
record) still prints (`HistoryEntry.to_dict`, `Session.history()`), and the session goes on.
"""

from __future__ import annotations

import loopguard
from loopguard.session.session import Session
from loopguard.state.history import SessionState
from loopguard.stores import codec


def _planted(outcome_hex: str) -> SessionState:
    guard = loopguard.Guard.from_dict({"version": 1})
    session = guard.session("s")
    session.before_call("read", {"path": "a"})
    session.after_call("read", {"path": "a"}, result="x")
    blob = codec.encode(session._state)
    real = session._state.history[0].outcome
    assert real is not None
    planted = blob.replace(real.hex().encode(), outcome_hex.encode())
    assert planted != blob
    return codec.decode(planted, 30, False)


def test_an_outcome_that_is_not_utf8_still_prints() -> None:
    state = _planted("99ff" + "00" * 17)  # used to raise UnicodeDecodeError in to_dict
    entry = state.history[0]
    assert entry.to_dict()["outcome"].endswith(":" + entry.outcome[-16:].hex())
    guard = loopguard.Guard.from_dict({"version": 1})
    session = Session(guard.notifier, "s", None, guard.policy(None), state)
    session.before_call("read", {"path": "a"})
    assert [e.to_dict()["seq"] for e in session.history()] == [1, 2]
