"""A damaged or planted stored record is that session's problem, never an exception or an
outage (issue 22, items 2 and 3): SQLite rows and Redis keys as an attacker, another
application sharing the key prefix, or a damaged disk would leave them.

Each planted record must leave `before_call` and `after_call` answering (fail_mode: open
allows with a fault, closed blocks), be logged once, stay untouched, and leave every other
session of the same store guarded. A zlib bomb is inflated at most MAX_STATE_BYTES, once.
"""

from __future__ import annotations

import logging
import sqlite3
import time
import zlib
from pathlib import Path
from typing import Any

import pytest

import loopguard
from loopguard.stores import SqliteStore
from loopguard.stores.codec import MAX_STATE_BYTES, StateCodecError, decode

RULES = "version: 1\nloop_detection: {enabled: true}\n"
CLOSED = "version: 1\nloop_detection: {enabled: true}\naggregator: {fail_mode: closed}\n"
EMPTY_DOC = b"[0,0,0,false,false,null,[],null,[],[],null,{}]"


def _bomb(inflated: int) -> bytes:
    """A small zlib blob (about 1/1000 of it) whose JSON inflates to `inflated` bytes."""
    squeeze = zlib.compressobj(9)
    chunk = b" " * (1 << 20)
    parts = [squeeze.compress(b"[")]
    parts += [squeeze.compress(chunk) for _ in range(inflated >> 20)]
    parts += [squeeze.compress(b"]"), squeeze.flush()]
    return b"LGS\x01\x01" + b"".join(parts)


BOMB = _bomb(MAX_STATE_BYTES * 3)  # 192 MiB of JSON in ~200 KB

# planted blobs: each must be refused by decode with a StateCodecError
BAD_BLOBS = {
    "zlib-bomb": BOMB,
    "infinity-seq": b'LGS\x01\x00[Infinity,0,0,false,false,"en",[],null,[],[],null,{}]',
    "nan-turn": b'LGS\x01\x00[0,NaN,0,false,false,"en",[],null,[],[],null,{}]',
    "float-seq": b"LGS\x01\x00[1.5,0,0,false,false,null,[],null,[],[],null,{}]",
    "text-seq": b'LGS\x01\x00["7",0,0,false,false,null,[],null,[],[],null,{}]',
    "list-call-id": b'LGS\x01\x00[1,0,0,false,false,null,[[1,"t","00",null,null,0,[1],0,null,'
    b"null,0]],null,[],[],null,{}]",
    "lang-list": b'LGS\x01\x00[0,0,0,false,true,["xx"],[],null,[],[],null,{}]',
    "history-rows": b'LGS\x01\x00[0,0,0,false,false,"en",[[1,2,3],[null],"x"],null,[],[],null,{}]',
    "turn-state": b'LGS\x01\x00[0,0,0,false,false,"en",[],null,[],[],[1,2,"x",{}],{}]',
    "raw-over-limit": b"LGS\x01\x00[" + b" " * (MAX_STATE_BYTES + 10) + b"]",
    "cut-zlib": b"LGS\x01\x01" + zlib.compress(b"[" + b"1," * 5000 + b"1]")[:-20],
}


@pytest.mark.parametrize("name", sorted(BAD_BLOBS))
def test_planted_blobs_are_refused_by_decode(name: str) -> None:
    start = time.monotonic()
    with pytest.raises(StateCodecError):
        decode(BAD_BLOBS[name], 30, True)
    assert time.monotonic() - start < 5


def test_a_bomb_is_inflated_no_further_than_the_limit() -> None:
    with pytest.raises(StateCodecError, match="over the stored limit of 64 MiB"):
        decode(BOMB, 30, True)


def test_a_state_over_the_limit_is_never_written() -> None:
    from loopguard.state.history import HistoryEntry, SessionState, append
    from loopguard.stores.codec import encode

    state = SessionState(30, True)
    for seq in range(1, 4):
        append(state, HistoryEntry(seq, "t" * (MAX_STATE_BYTES // 2), b"0" * 16, None, 0, None), 30)
    with pytest.raises(StateCodecError, match="over the stored limit"):
        encode(state)


def _loop(session: Any, calls: int = 6) -> list[str]:
    actions = []
    for _ in range(calls):
        actions.append(session.before_call("read", {"p": 1}).action)
        session.after_call("read", {"p": 1}, result="same")
    return actions


# -- SQLite ---------------------------------------------------------------------------------
SQLITE_ROWS: dict[str, tuple[Any, Any]] = {  # (token, state) planted in the row
    "text-token": ("notanumber", b"LGS\x01\x00" + EMPTY_DOC),
    "float-token": (1.5, b"LGS\x01\x00" + EMPTY_DOC),
    "zero-token": (0, b"LGS\x01\x00" + EMPTY_DOC),
    "negative-token": (-5, b"LGS\x01\x00" + EMPTY_DOC),
    "digits-token": ("9" * 5000, b"LGS\x01\x00" + EMPTY_DOC),
    "text-state": (5, "some text"),
    "integer-state": (5, 5_000_000_000),
    "real-state": (5, 2.5),
    "zlib-bomb": (5, BOMB),
    "infinity-seq": (5, BAD_BLOBS["infinity-seq"]),
    "oversized-blob": (5, BAD_BLOBS["raw-over-limit"]),
}


def _plant_sqlite(path: Path, key: str, token: Any, state: Any) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT OR REPLACE INTO loopguard_sessions VALUES (?, ?, ?, NULL)", (key, token, state)
        )
    conn.close()


def _sqlite_row(path: Path, key: str) -> Any:
    with sqlite3.connect(path) as conn:
        row = conn.execute(
            "SELECT token, typeof(state), length(state) FROM loopguard_sessions WHERE key = ?",
            (key,),
        ).fetchone()
    conn.close()
    return row


@pytest.mark.parametrize("name", sorted(SQLITE_ROWS))
def test_a_planted_sqlite_row_is_that_sessions_problem(
    name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "state.db"
    loopguard.Guard.from_yaml(RULES, store=SqliteStore(path)).session("warm").before_call("t", {})
    token, state = SQLITE_ROWS[name]
    _plant_sqlite(path, "bad", token, state)
    before = _sqlite_row(path, "bad")
    with caplog.at_level(logging.WARNING, logger="loopguard"):
        guard = loopguard.Guard.from_yaml(RULES, store=SqliteStore(path))
        start = time.monotonic()
        bad = [guard.session("bad").before_call("read", {"p": 1}) for _ in range(3)]
        assert guard.session("bad").after_call("read", {"p": 1}, result="x").action == "allow"
        elapsed = time.monotonic() - start
        healthy = _loop(guard.session("healthy"))
    assert [d.action for d in bad] == ["allow"] * 3
    assert all(d.faults for d in bad)  # allowed, with the reason
    assert healthy[:3] == ["allow", "allow", "critical"]  # guarding stays on for the others
    damaged = [r for r in caplog.records if "cannot be read" in r.getMessage()]
    assert len(damaged) == 1 and "'bad'" in damaged[0].getMessage()
    assert not [r for r in caplog.records if "unavailable" in r.getMessage()]
    assert _sqlite_row(path, "bad") == before  # left for inspection
    assert elapsed < 10


def test_a_planted_sqlite_row_blocks_when_fail_mode_is_closed(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    loopguard.Guard.from_yaml(RULES, store=SqliteStore(path)).session("warm").before_call("t", {})
    _plant_sqlite(path, "bad", 5, "some text")
    guard = loopguard.Guard.from_yaml(CLOSED, store=SqliteStore(path))
    decision = guard.session("bad").before_call("read", {})
    assert decision.action == "critical" and decision.detector == "store"
    assert "not a blob" in decision.faults[0]
    guard.store.discard("bad")  # documented way out: the session starts afresh
    assert guard.session("bad").before_call("read", {}).action == "allow"


def test_a_bomb_is_decoded_once_not_on_every_call(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    loopguard.Guard.from_yaml(RULES, store=SqliteStore(path)).session("warm").before_call("t", {})
    _plant_sqlite(path, "bad", 5, BOMB)
    session = loopguard.Guard.from_yaml(RULES, store=SqliteStore(path)).session("bad")
    session.before_call("read", {})
    start = time.monotonic()
    for _ in range(20):
        session.before_call("read", {})
    assert time.monotonic() - start < 1.0  # one inflation of 64 MiB is ~0.1 s; 20 would show


# -- Redis / Valkey ---------------------------------------------------------------------------
REDIS_PLANTS: dict[str, Any] = {  # how the key is planted, given a client and the key
    "string-key": lambda r, k: r.set(k, "x"),
    "list-key": lambda r, k: r.rpush(k, "a", "b"),
    "text-token": lambda r, k: r.hset(k, mapping={"v": "notanumber", "b": b"LGS"}),
    "float-token": lambda r, k: r.hset(k, mapping={"v": "1.5", "b": b"LGS\x01\x00" + EMPTY_DOC}),
    "digits-token": lambda r, k: r.hset(k, mapping={"v": "9" * 5000, "b": b"LGS"}),
    "padded-token": lambda r, k: r.hset(k, mapping={"v": "07", "b": b"LGS\x01\x00" + EMPTY_DOC}),
    "no-blob": lambda r, k: r.hset(k, mapping={"v": "5"}),
    "no-token": lambda r, k: r.hset(k, mapping={"b": b"LGS\x01\x00" + EMPTY_DOC}),
    "zlib-bomb": lambda r, k: r.hset(k, mapping={"v": "5", "b": BOMB}),
    "infinity-seq": lambda r, k: r.hset(k, mapping={"v": "5", "b": BAD_BLOBS["infinity-seq"]}),
    "oversized-blob": lambda r, k: r.hset(k, mapping={"v": "5", "b": BAD_BLOBS["raw-over-limit"]}),
}


def _dump(client: Any, key: str) -> Any:
    kind = client.type(key)
    return kind, client.dump(key)


@pytest.mark.slow  # a real Valkey server
@pytest.mark.parametrize("name", sorted(REDIS_PLANTS))
def test_a_planted_redis_key_is_that_sessions_problem(
    name: str, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    redis = pytest.importorskip("redis")
    from loopguard.stores import RedisStore

    prefix = f"plant{time.monotonic_ns()}:"
    client = redis.Redis.from_url(redis_url)
    REDIS_PLANTS[name](client, prefix + "bad")
    before = _dump(client, prefix + "bad")
    with caplog.at_level(logging.WARNING, logger="loopguard"):
        guard = loopguard.Guard.from_yaml(
            RULES, store=RedisStore.from_url(redis_url, key_prefix=prefix)
        )
        seen = []
        for _ in range(6):  # the repro: calls alternate between the bad and a healthy session
            bad = guard.session("bad").before_call("read", {"p": 1})
            assert bad.action == "allow" and bad.faults
            seen.append(guard.session("healthy").before_call("read", {"p": 1}))
            guard.session("healthy").after_call("read", {"p": 1}, result="same")
        assert guard.session("bad").after_call("read", {"p": 1}, result="x").action == "allow"
    client.close()
    assert [d.action for d in seen[:3]] == ["allow", "allow", "critical"]
    assert not any(d.faults for d in seen)  # the store never counted as down
    damaged = [r for r in caplog.records if "cannot be read" in r.getMessage()]
    assert len(damaged) == 1 and "'bad'" in damaged[0].getMessage()
    assert not [r for r in caplog.records if "unavailable" in r.getMessage()]
    client = redis.Redis.from_url(redis_url)
    assert _dump(client, prefix + "bad") == before  # left for inspection
    client.close()


@pytest.mark.slow  # a real Valkey server
@pytest.mark.parametrize(
    "plant, fault",
    [("string-key", "not a loopguard hash"), ("oversized-blob", "over the limit of 64 MiB")],
)
def test_a_key_replaced_under_a_cached_session_is_not_an_outage(
    plant: str, fault: str, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    redis = pytest.importorskip("redis")
    from loopguard.stores import RedisStore

    prefix = f"swap{time.monotonic_ns()}:"
    store = RedisStore.from_url(redis_url, key_prefix=prefix)
    guard = loopguard.Guard.from_yaml(RULES, store=store)
    guard.session("bad").before_call("read", {"p": 0})  # cached: the next call only writes
    client = redis.Redis.from_url(redis_url)
    client.delete(prefix + "bad")
    REDIS_PLANTS[plant](client, prefix + "bad")  # the write (the CAS script) meets it
    client.close()
    with caplog.at_level(logging.WARNING, logger="loopguard"):
        bad = guard.session("bad").before_call("read", {"p": 1})
        healthy = _loop(guard.session("healthy"), 3)
    assert bad.action == "allow" and fault in bad.faults[0], bad.faults
    assert healthy == ["allow", "allow", "critical"]
    assert not [r for r in caplog.records if "unavailable" in r.getMessage()]
