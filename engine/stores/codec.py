"""A compact, versioned encoding of a `SessionState`, so any process can pick a session up.

What is stored: the history entries (every slot, `round`, `shape`, `flags` and `unknown`
included), the counters (`seq`, `turn`, `round`, `batch_open`, `tools_closed`, `lang`),
`last_result`, escalation counts, warning keys, the turn state, the calls awaiting
`after_call` and the detector scratch state as each detector declares
(`Detector.scratch_codec`): "custom" through its own `encode_scratch`/`decode_scratch`
(the fuzzy window's packed gram sets, the post-compaction window's digests), "derived"
not at all (memos the detector rebuilds by walking the history, which is exact), "json"
when plain JSON data. What is rebuilt instead: `digests` and the per-signature index.
Entries are shared by identity between the history, `last_result` and the open calls, so
those two refer to history entries by `seq`.

Layout: `LGS` + format version byte + flags byte (1: zlib) + JSON. A blob of another format
version, or one that is truncated or damaged, raises `StateCodecError` saying which; so does
one whose JSON is over MAX_STATE_BYTES (inflated at most that far: a few megabytes of zlib
can inflate to gigabytes) or holds a value of the wrong type (a planted `Infinity` as a
counter, a list as a call id): a stored blob is input like any other.
A "json" scratch value that is not plain JSON data is dropped (the detector must rebuild it).
The registered detectors are asked at encode/decode time: the stored format depends on
what the detectors declare, which is why the codec belongs to the stores stage (above
detection) rather than beside the state records it encodes.
"""

from __future__ import annotations

import json
import zlib
from functools import lru_cache
from typing import Any

from loopguard.detection.plugins import load_registry
from loopguard.errors import LoopguardError
from loopguard.state.history import HistoryEntry, SessionState, append
from loopguard.state.turn import TurnExpectation, TurnState
from loopguard.text.messages import has_han

FORMAT = 1
MAGIC = b"LGS"
COMPRESS_FROM = 8192  # payloads at least this long are zlib-compressed (fuzzy grams, long texts)
OPEN_KEPT = 16  # calls awaiting after_call that already left the history: the newest kept
USER_TEXT_MAX = 2048  # characters of the turn's user text kept (only its language is read)
MAX_STATE_BYTES = 64 << 20  # JSON of one stored state, at most (history 30: ~4 KB)
_OPEN = "_open"  # the session's own scratch: calls awaiting after_call


class StateCodecError(LoopguardError):
    """A stored session state that cannot be read (other format version, truncated, damaged)."""


def _u(value: Any) -> bytes | None:
    return None if value is None else bytes.fromhex(_str(value))


def _int(value: Any) -> int:
    """A JSON integer (not a float, a bool or a text of digits)."""
    if type(value) is not int:
        raise ValueError(f"expected an integer, got {type(value).__name__}")
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a text, got {type(value).__name__}")
    return value


def _opt_str(value: Any) -> str | None:
    return None if value is None else _str(value)


def _entry(e: HistoryEntry) -> list[Any]:
    outcome, shape = e.outcome, e.shape
    return [
        e.seq,
        e.tool,
        e.digest.hex(),
        None if outcome is None else outcome.hex(),
        e.run_id,
        e.turn,
        e.call_id,
        e.round,
        e.unknown,
        None if shape is None else shape.hex(),
        e.flags,
    ]


def _unentry(row: list[Any]) -> HistoryEntry:
    seq, tool, digest, outcome, run_id, turn, call_id, rnd, unknown, shape, flags = row
    entry = HistoryEntry(
        _int(seq),
        _str(tool),
        bytes.fromhex(_str(digest)),
        _opt_str(run_id),
        _int(turn),
        _opt_str(call_id),
        _int(rnd),
    )
    entry.outcome, entry.unknown, entry.shape, entry.flags = (
        _u(outcome),
        _opt_str(unknown),
        _u(shape),
        _int(flags),
    )
    return entry


def _ref(entry: HistoryEntry, by_id: dict[int, int]) -> Any:
    """An entry of the history by seq, any other entry in full."""
    return entry.seq if id(entry) in by_id else _entry(entry)


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
    gone = sorted(e.seq for waiting in opened.values() for e in waiting if id(e) not in by_id)
    oldest_kept = gone[-OPEN_KEPT] if len(gone) > OPEN_KEPT else 0
    rows = []
    for key, waiting in opened.items():
        refs = [_ref(e, by_id) for e in waiting if id(e) in by_id or e.seq >= oldest_kept]
        if refs:
            rows.append([key, refs])
    return rows


def _scratch(state: SessionState, by_id: dict[int, int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    codecs = _detectors()
    for key, value in state.scratch.items():
        if key == _OPEN:
            out[key] = _open_calls(value, by_id)
            continue
        detector = codecs.get(key)
        how = detector.scratch_codec if detector is not None else "json"
        if how == "derived":
            continue
        if detector is not None and how == "custom":
            data = detector.encode_scratch(value)
            if data is not None:
                out[key] = data
                continue
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            continue  # not plain data: the detector rebuilds it
        out["x:" + key] = value
    return out


def _detectors() -> dict[str, Any]:
    """Registered detectors by id: their `scratch_codec` says how their scratch is stored."""
    return _by_id(load_registry())


@lru_cache(maxsize=4)
def _by_id(registry: Any) -> dict[str, Any]:
    return {entry.id: entry.detector for entry in registry.entries}


def encode(state: SessionState) -> bytes:
    """The state as a self-describing blob (read the lock-free snapshot under `state.lock`)."""
    history = state.history
    by_id = {id(e): e.seq for e in history}
    last = state.last_result
    ts = state.turn_state
    turn = None
    if isinstance(ts, TurnState):
        exp = ts.expectation
        # slots 3 and 4 held fields the turn state no longer has (tools_closed, rounds):
        # written as false and 0 so that blobs read the same in older and newer versions
        turn = [
            None if exp is None else [exp.rule, exp.tool, exp.args, exp.reason],
            ts.retries,
            ts.satisfied,
            False,
            0,
            _user_text(ts.user_text),
        ]
        if ts.other_args:  # appended only when set, so older blobs and readers still agree
            turn.append(True)
    doc = [
        state.seq,
        state.turn,
        state.round,
        state.batch_open,
        state.tools_closed,
        state.lang,
        [_entry(e) for e in history],
        None if last is None else [_ref(last[0], by_id), last[1]],
        [[k, v] for k, v in state.criticals.items()],
        [[k, v] for k, v in state.warned.items()],
        turn,
        _scratch(state, by_id),
    ]
    payload = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )
    if len(payload) > MAX_STATE_BYTES:  # never write what decode would refuse
        raise StateCodecError(
            f"session state is {len(payload) >> 20} MiB, over the stored limit of "
            f"{MAX_STATE_BYTES >> 20} MiB (history_size or tool names too large)"
        )
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
        raise StateCodecError(
            f"session state has format version {blob[3]}; this loopguard "
            f"reads version {FORMAT} only (a newer or older loopguard wrote it)"
        )
    try:
        if blob[4] not in (0, 1):
            raise ValueError(f"unknown flags {blob[4]}")
        payload = _inflate(blob[5:]) if blob[4] == 1 else blob[5:]
        if len(payload) > MAX_STATE_BYTES:
            raise StateCodecError(_too_large())
        return _build(json.loads(payload.decode("utf-8", "surrogatepass")), history_size, indexed)
    except StateCodecError:
        raise
    except Exception as exc:  # noqa: BLE001 — any damage (also in a detector's decode_scratch)
        raise StateCodecError(
            f"session state is truncated or damaged: {type(exc).__name__}: {str(exc)[:200]}"
        ) from None


def _too_large() -> str:
    return f"session state is over the stored limit of {MAX_STATE_BYTES >> 20} MiB"


def _inflate(data: bytes) -> bytes:
    """zlib data inflated to at most MAX_STATE_BYTES (+1 byte to tell), never further."""
    inflater = zlib.decompressobj()
    payload = inflater.decompress(data, MAX_STATE_BYTES + 1)
    if len(payload) > MAX_STATE_BYTES or inflater.unconsumed_tail:
        raise StateCodecError(_too_large() + " (it inflates further)")
    if not inflater.eof:
        raise ValueError("the zlib stream is cut off")
    return payload


def _build(doc: list[Any], history_size: int, indexed: bool) -> SessionState:
    (
        seq,
        turn,
        rnd,
        batch_open,
        tools_closed,
        lang,
        history,
        last,
        criticals,
        warned,
        turn_state,
        scratch,
    ) = doc
    state = SessionState(history_size, indexed)
    state.seq, state.turn, state.round = _int(seq), _int(turn), _int(rnd)
    state.batch_open, state.tools_closed = bool(batch_open), bool(tools_closed)
    state.lang = _opt_str(lang)
    for row in history:
        append(state, _unentry(row), history_size)
    by_seq = {e.seq: e for e in state.history}

    def unref(ref: Any) -> HistoryEntry | None:
        """A history entry by seq (None when a smaller history_size dropped it), or in full."""
        return by_seq.get(ref) if isinstance(ref, int) else _unentry(ref)

    if last is not None:
        entry = unref(last[0])
        state.last_result = None if entry is None else (entry, _opt_str(last[1]))
    state.criticals = {_opt_str(k): _int(v) for k, v in criticals}
    state.warned = {_str(k): _int(v) for k, v in warned}
    if turn_state is not None:
        exp, retries, satisfied, _closed, _rounds, user_text, *other_args = turn_state
        state.turn_state = TurnState(
            None
            if exp is None
            else TurnExpectation(str(exp[0]), str(exp[1]), dict(exp[2]), str(exp[3])),
            _int(retries),
            bool(satisfied),
            str(user_text),
            bool(other_args and other_args[0]),
        )
    detectors = _detectors()
    for key, value in scratch.items():
        if key == _OPEN:
            opened = {_str(k): [e for e in map(unref, refs) if e is not None] for k, refs in value}
            state.scratch[key] = {k: v for k, v in opened.items() if v}
        elif key.startswith("x:"):
            state.scratch[key[2:]] = value
        elif key in detectors and detectors[key].scratch_codec == "custom":
            state.scratch[key] = detectors[key].decode_scratch(value)
        else:
            raise ValueError(f"unknown scratch key {key!r}")
    return state
