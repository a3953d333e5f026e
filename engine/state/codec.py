"""A compact, versioned encoding of a `SessionState`, so any process can pick a session up.

What is stored: the history entries (every slot, `round`, `shape`, `flags` and `unknown`
included), the counters (`seq`, `turn`, `round`, `batch_open`, `tools_closed`, `lang`),
`last_result`, escalation counts, warning keys, the turn state and the detector scratch
state that cannot be derived: the fuzzy detector's window (texts and gram sets, packed),
the post-compaction window and the calls awaiting `after_call`. What is rebuilt instead:
`digests` and the per-signature index (from the history), the ping-pong and unknown-tool
memos (dropped: both detectors walk the history again when they have none, which is exact).
Entries are shared by identity between the history, `last_result` and the open calls, so
those two refer to history entries by `seq`.

Layout: `LGS` + format version byte + flags byte (1: zlib) + JSON. A blob of another format
version, or one that is truncated or damaged, raises `StateCodecError` saying which.
Third-party scratch values are kept when they are plain JSON data, else dropped (a detector
must then rebuild them, as the built-in memos do).
"""

from __future__ import annotations

import json
import zlib
from binascii import Error as BinasciiError
from binascii import a2b_base64, b2a_base64
from typing import Any

import numpy as np

from loopguard.errors import LoopguardError
from loopguard.state.history import HistoryEntry, SessionState, append
from loopguard.text.messages import has_han
from loopguard.state.turn import TurnExpectation, TurnState
from loopguard.state.window import TurnWindow

FORMAT = 1
MAGIC = b"LGS"
COMPRESS_FROM = 8192  # payloads at least this long are zlib-compressed (fuzzy grams, long texts)
OPEN_KEPT = 16  # calls awaiting after_call that already left the history: the newest kept
USER_TEXT_MAX = 2048  # characters of the turn's user text kept (only its language is read)
_DERIVED = frozenset({"ping_pong", "unknown_tool_repeat"})  # memos rebuilt from the history
_FUZZY, _COMPACTION, _OPEN = "doom_loop_fuzzy", "post_compaction_guard", "_open"
_MASK = np.uint64((1 << 21) - 1)


class StateCodecError(LoopguardError):
    """A stored session state that cannot be read (other format version, truncated, damaged)."""


def _b(value: bytes | None) -> str | None:
    return None if value is None else value.hex()


def _u(value: Any) -> bytes | None:
    return None if value is None else bytes.fromhex(value)


def _entry(e: HistoryEntry) -> list[Any]:
    outcome, shape = e.outcome, e.shape
    return [e.seq, e.tool, e.digest.hex(), None if outcome is None else outcome.hex(), e.run_id,
            e.turn, e.call_id, e.round, e.unknown, None if shape is None else shape.hex(), e.flags]


def _unentry(row: list[Any]) -> HistoryEntry:
    seq, tool, digest, outcome, run_id, turn, call_id, rnd, unknown, shape, flags = row
    entry = HistoryEntry(int(seq), str(tool), bytes.fromhex(digest), run_id, int(turn), call_id, int(rnd))
    entry.outcome, entry.unknown, entry.shape, entry.flags = _u(outcome), unknown, _u(shape), int(flags)
    return entry


def _ref(entry: HistoryEntry, by_id: dict[int, int]) -> Any:
    """An entry of the history by seq, any other entry in full."""
    return entry.seq if id(entry) in by_id else _entry(entry)


def _gram(value: Any) -> list[Any]:
    """A fuzzy window item's text or gram set (see loopguard.detectors.support.grams), exactly."""
    if isinstance(value, str):
        return ["t", value]
    if isinstance(value, frozenset):
        return ["s", ["".join(g) for g in value]]
    codes = np.asarray(value, dtype=np.uint64)
    parts = np.stack((codes >> np.uint64(42), (codes >> np.uint64(21)) & _MASK, codes & _MASK), axis=1)
    top = int(parts.max()) if len(codes) else 0
    dtype = np.uint8 if top < 256 else np.uint16 if top < 65536 else np.uint32
    return ["a", np.dtype(dtype).itemsize, b2a_base64(parts.astype(dtype).tobytes(), newline=False).decode()]


def _ungram(row: list[Any]) -> Any:
    kind = row[0]
    if kind == "t":
        return str(row[1])
    if kind == "s":
        return frozenset(tuple(str(g)) for g in row[1])
    if kind != "a" or row[1] not in (1, 2, 4):
        raise ValueError(f"unknown gram form {kind!r}")
    dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32}[row[1]]
    parts = np.frombuffer(a2b_base64(row[2]), dtype=dtype).reshape(-1, 3).astype(np.uint64)
    return (parts[:, 0] << np.uint64(42)) | (parts[:, 1] << np.uint64(21)) | parts[:, 2]


def _user_text(text: str) -> str:
    """The user text, cut to USER_TEXT_MAX characters without changing its language."""
    if len(text) <= USER_TEXT_MAX:
        return text
    head = text[:USER_TEXT_MAX]
    if not has_han(head) and has_han(text):
        head += next(c for c in text[USER_TEXT_MAX:] if has_han(c))
    return head


def _open_calls(opened: dict[str, list[HistoryEntry]], by_id: dict[int, int]) -> list[Any]:
    """The calls awaiting after_call: history entries by seq; of the others (mostly blocked
    calls, which are never answered) only the newest OPEN_KEPT, so the state stays small."""
    gone = sorted((e.seq for waiting in opened.values() for e in waiting if id(e) not in by_id))
    oldest_kept = gone[-OPEN_KEPT] if len(gone) > OPEN_KEPT else 0
    rows = []
    for key, waiting in opened.items():
        refs = [_ref(e, by_id) for e in waiting if id(e) in by_id or e.seq >= oldest_kept]
        if refs:
            rows.append([key, refs])
    return rows


def _scratch(state: SessionState, by_id: dict[int, int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in state.scratch.items():
        if key in _DERIVED:
            continue
        if key == _OPEN:
            out[key] = _open_calls(value, by_id)
        elif key == _FUZZY and isinstance(value, TurnWindow):
            out[key] = [value.turn, value.size,
                        [[t, _gram(g), s, r] for t, g, s, r in value.items]]
        elif key == _COMPACTION and isinstance(value, list):
            out[key] = [[t, _b(d), _b(o), s] for t, d, o, s in value]
        else:
            try:
                json.dumps(value)
            except (TypeError, ValueError):
                continue  # not plain data: the detector rebuilds it
            out["x:" + key] = value
    return out


def encode(state: SessionState) -> bytes:
    """The state as a self-describing blob (read the lock-free snapshot under `state.lock`)."""
    history = state.history
    by_id = {id(e): e.seq for e in history}
    last = state.last_result
    ts = state.turn_state
    turn = None
    if isinstance(ts, TurnState):
        exp = ts.expectation
        turn = [None if exp is None else [exp.rule, exp.tool, exp.args, exp.reason],
                ts.retries, ts.satisfied, ts.tools_closed, ts.rounds, _user_text(ts.user_text)]
        if ts.other_args:  # appended only when set, so older blobs and readers still agree
            turn.append(True)
    doc = [
        state.seq, state.turn, state.round, state.batch_open, state.tools_closed, state.lang,
        [_entry(e) for e in history],
        None if last is None else [_ref(last[0], by_id), last[1]],
        [[k, v] for k, v in state.criticals.items()],
        [[k, v] for k, v in state.warned.items()],
        turn,
        _scratch(state, by_id),
    ]
    payload = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    if len(payload) >= COMPRESS_FROM:
        return MAGIC + bytes((FORMAT, 1)) + zlib.compress(payload, 1)
    return MAGIC + bytes((FORMAT, 0)) + payload


def decode(blob: bytes, history_size: int, indexed: bool) -> SessionState:
    """A fresh `SessionState` from `encode`'s blob; StateCodecError when it cannot be read."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise StateCodecError(f"session state must be bytes, got {type(blob).__name__}")
    blob = bytes(blob)
    if len(blob) < 5 or blob[:3] != MAGIC:
        raise StateCodecError("session state is not a loopguard state blob (bad header)")
    if blob[3] != FORMAT:
        raise StateCodecError(f"session state has format version {blob[3]}; this loopguard "
                              f"reads version {FORMAT} only (a newer or older loopguard wrote it)")
    try:
        payload = zlib.decompress(blob[5:]) if blob[4] == 1 else blob[5:]
        if blob[4] not in (0, 1):
            raise ValueError(f"unknown flags {blob[4]}")
        return _build(json.loads(payload.decode("utf-8", "surrogatepass")), history_size, indexed)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, StopIteration,
            zlib.error, BinasciiError, RecursionError) as exc:
        raise StateCodecError(f"session state is truncated or damaged: {type(exc).__name__}: "
                              f"{str(exc)[:200]}") from None


def _build(doc: list[Any], history_size: int, indexed: bool) -> SessionState:
    (seq, turn, rnd, batch_open, tools_closed, lang, history, last, criticals, warned,
     turn_state, scratch) = doc
    state = SessionState(history_size, indexed)
    state.seq, state.turn, state.round = int(seq), int(turn), int(rnd)
    state.batch_open, state.tools_closed, state.lang = bool(batch_open), bool(tools_closed), lang
    for row in history:
        append(state, _unentry(row), history_size)
    by_seq = {e.seq: e for e in state.history}

    def unref(ref: Any) -> HistoryEntry | None:
        """A history entry by seq (None when a smaller history_size dropped it), or in full."""
        return by_seq.get(ref) if isinstance(ref, int) else _unentry(ref)

    if last is not None:
        entry = unref(last[0])
        state.last_result = None if entry is None else (entry, last[1])
    state.criticals = {k: int(v) for k, v in criticals}
    state.warned = {str(k): int(v) for k, v in warned}
    if turn_state is not None:
        exp, retries, satisfied, closed, rounds, user_text, *other_args = turn_state
        state.turn_state = TurnState(
            None if exp is None else TurnExpectation(str(exp[0]), str(exp[1]), dict(exp[2]), str(exp[3])),
            int(retries), bool(satisfied), bool(closed), int(rounds), str(user_text),
            bool(other_args and other_args[0]))
    for key, value in scratch.items():
        if key == _OPEN:
            opened = {k: [e for e in map(unref, refs) if e is not None] for k, refs in value}
            state.scratch[key] = {k: v for k, v in opened.items() if v}
        elif key == _FUZZY:
            window = TurnWindow(int(value[0]), int(value[1]))
            window.items = [(t, _ungram(g), int(s), int(r)) for t, g, s, r in value[2]]
            state.scratch[key] = window
        elif key == _COMPACTION:
            state.scratch[key] = [(t, _u(d), _u(o), int(s)) for t, d, o, s in value]
        elif key.startswith("x:"):
            state.scratch[key[2:]] = value
        else:
            raise ValueError(f"unknown scratch key {key!r}")
    return state
