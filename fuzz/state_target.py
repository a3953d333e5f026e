"""Fuzz target for the stored session state: the codec and the stores' record reading (issue 22).

    python fuzz/mutate.py state --runs 200000                           # no dependency
    python fuzz/state_target.py fuzz/corpus-state -max_total_time=600    # atheris (seeds first:
    python fuzz/state_target.py --seed fuzz/corpus-state)                # writes seeds())

The first input byte picks what the rest is: a whole blob (`decode`), a JSON payload behind a
valid header (plain or zlib), a SQLite row (`SqliteBackend.load` on a row whose token and
state columns take the SQLite type the input says) or a Redis hash's two fields
(`redis_store._record`). The property: reading gives a state or raises `StateCodecError`,
nothing else; and a state that was read can be used: a session on it takes a turn, calls,
results and a compaction without an exception and without a built-in detector failing, and
it encodes to a blob that decodes and encodes the same again.
"""

from __future__ import annotations

import sqlite3
import sys
import zlib
from typing import Any

try:
    import atheris
except ImportError:  # the suite's short run (fuzz/mutate.py) needs no atheris
    atheris = None

if atheris is not None:
    with atheris.instrument_imports(include=["loopguard"]):
        import loopguard
        from loopguard.stores import codec, redis_store
        from loopguard.stores.sqlite import SqliteBackend
else:
    import loopguard
    from loopguard.stores import codec, redis_store
    from loopguard.stores.sqlite import SqliteBackend

from loopguard.session.session import Session
from loopguard.state.history import SessionState

HEADER = codec.MAGIC + bytes((codec.FORMAT,))
RULES = {
    "version": 1,
    "loop_detection": {"enabled": True, "history_size": 8},
    "extends": ["builtin:portfolio-en"],
}
_GUARD = loopguard.Guard.from_dict(RULES)
_POLICY = _GUARD.policy(None)
_SQLITE = SqliteBackend(":memory:", ttl_s=None)


class _Faults:
    """The session's notifier: a built-in detector that fails on a state that was read is a
    failure of the property (an installed plugin's faults are its own)."""

    def decision(self, session_id: str, decision: Any) -> None:
        pass

    def fault(self, source: str, error: str) -> None:
        if source.startswith("loopguard-engine["):
            raise AssertionError(f"{source} failed on a decoded state: {error}")


def _use(state: SessionState) -> None:
    """Drive a session on a state that was read; it must take everything."""
    session = Session(_Faults(), "fuzz", None, _POLICY, state)  # type: ignore[arg-type]
    session.begin_turn([{"role": "user", "content": "please read the file"}])
    session.begin_round()
    for call_id in ("f1", "f2"):
        decision = session.before_call("read_file", {"path": "a"}, call_id=call_id)
        decision.to_dict()
        session.after_call("read_file", {"path": "a"}, result="same", call_id=call_id)
    session.end_round()
    session.after_call("grep", {"q": "x"}, error="boom")  # a call with no before_call
    session.compacted()
    session.before_call("read_file", {"path": "a"})
    session.finish_round("done")
    for entry in session.history():
        entry.to_dict()
    with state.lock:
        blob = codec.encode(state)
    again = codec.decode(blob, _POLICY.history_size, _POLICY.indexed)
    assert codec.encode(again) == blob, "encode(decode(encode(state))) differs"


def _decoded(blob: bytes) -> SessionState | None:
    try:
        return codec.decode(blob, _POLICY.history_size, _POLICY.indexed)
    except codec.StateCodecError:
        return None


def _sqlite_value(kind: int, raw: bytes) -> Any:
    """A column value of the SQLite type `kind` picks, made from `raw`."""
    kind %= 5
    if kind == 0:
        return raw
    if kind == 1:
        return raw.decode("utf-8", "replace")
    if kind == 2:
        return int.from_bytes(raw[:8].ljust(8, b"\0"), "big", signed=True)
    if kind == 3:
        return float(len(raw)) / 3
    return None


def _sqlite_row(data: bytes) -> None:
    if len(data) < 2:
        return
    token_kind, state_kind = data[0], data[1]
    cut = 3 + (data[2] % 24 if len(data) > 2 else 0)
    token, state = _sqlite_value(token_kind, data[3:cut]), _sqlite_value(state_kind, data[cut:])
    with _SQLITE._lock:
        db = _SQLITE._db()
        try:
            db.execute(
                "INSERT OR REPLACE INTO loopguard_sessions VALUES (?, ?, ?, NULL)",
                ("k", token, state),
            )
        except sqlite3.IntegrityError:  # NOT NULL columns: a NULL is not even stored
            return
    try:
        loaded = _SQLITE.load("k")
    except codec.StateCodecError:
        return
    assert loaded is not None
    assert type(loaded[0]) is int and 0 < loaded[0] < 1 << 63 and type(loaded[1]) is bytes
    state_read = _decoded(loaded[1])
    if state_read is not None:
        _use(state_read)


def _redis_hash(data: bytes) -> None:
    cut = data[0] % 24 if data else 0
    token: Any = data[1 : 1 + cut] if len(data) > 1 else None
    blob: Any = data[1 + cut :] if len(data) > 1 + cut else None
    if data[:1] and data[0] & 0x80:
        token = None if data[0] & 0x40 else token
    try:
        record = redis_store._record(token, blob)
    except codec.StateCodecError:
        return
    if record is None:
        assert token is None and blob is None
        return
    assert type(record[0]) is int and 0 < record[0] < 1 << 63 and type(record[1]) is bytes
    state_read = _decoded(record[1])
    if state_read is not None:
        _use(state_read)


def target(data: bytes) -> None:
    if not data:
        return
    mode, rest = data[0] % 5, data[1:]
    if mode == 3:
        _sqlite_row(rest)
        return
    if mode == 4:
        _redis_hash(rest)
        return
    blob = (rest, HEADER + b"\x00" + rest, HEADER + b"\x01" + zlib.compress(rest, 1))[mode]
    state = _decoded(blob)
    if state is not None:
        _use(state)


def _sample_states() -> list[SessionState]:
    """States the engine really writes: calls, failures, a turn, a compaction, fuzzy grams."""
    states = []
    for rules in (RULES, {"version": 1}):
        guard = loopguard.Guard.from_dict(rules)
        session = guard.session("seed")
        session.begin_turn([{"role": "user", "content": "check the portfolio"}])
        for i in range(6):
            args = {"path": "a" if i % 2 else "b", "text": "x" * 80 + str(i % 3)}
            session.before_call("write_file", args, call_id=f"c{i}")
            if i % 3:
                session.after_call("write_file", args, error="EACCES", call_id=f"c{i}")
            else:
                session.after_call("write_file", args, result={"ok": True}, call_id=f"c{i}")
        session.compacted()
        session.before_call("read_file", {"path": "z"})
        states.append(session._state)
    states.append(SessionState(8, True))
    return states


def seeds() -> list[bytes]:
    """Each sample state as a blob, as its JSON payload, as SQLite rows and Redis fields."""
    out: list[bytes] = []
    for state in _sample_states():
        blob = codec.encode(state)
        payload = blob[5:] if blob[4] == 0 else zlib.decompress(blob[5:])
        out += [bytes([0]) + blob, bytes([1]) + payload, bytes([2]) + payload]
        token = b"12345"
        out.append(bytes([3, 2, 0, 8]) + (12345).to_bytes(8, "big") + blob)
        out.append(bytes([4, len(token)]) + token + blob)
    return out


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--seed":
        import hashlib
        from pathlib import Path

        folder = Path(sys.argv[2])
        folder.mkdir(parents=True, exist_ok=True)
        for seed in seeds():
            (folder / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
        return
    if atheris is None:
        raise SystemExit("pip install atheris first (or run: python fuzz/mutate.py state)")
    atheris.Setup(sys.argv, target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
