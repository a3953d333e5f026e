"""Shared state that vanishes under a running store is never lost silently (issue 22, item 21):
the SQLite file deleted (with its -wal and -shm) while in use is noticed and opened again, and
a record that vanished while this process held it (that file, FLUSHALL or a deleted Redis key)
is written again from this process's copy, with a warning. A record that merely expired is
not brought back.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

import loopguard
from loopguard.stores import SqliteStore
from loopguard.stores import sqlite as sqlite_module

RULES = {"version": 1}


def _calls(guard: loopguard.Guard, count: int) -> list[str]:
    session = guard.session("s")
    actions = []
    for _ in range(count):
        actions.append(session.before_call("read", {"path": "a"}).action)
        session.after_call("read", {"path": "a"}, result="same")
    return actions


def _delete(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def test_a_deleted_sqlite_file_is_noticed_and_the_sessions_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(sqlite_module, "_CHECK_FILE_S", 0.0)
    db = tmp_path / "state.db"
    guard = loopguard.Guard.from_dict(RULES, store=SqliteStore(db))
    assert _calls(guard, 2) == ["allow", "allow"]
    _delete(db)
    with caplog.at_level(logging.WARNING, logger="loopguard"):
        assert _calls(guard, 1) == ["critical"]  # the loop is still seen here
    assert "deleted or replaced while in use" in caplog.text  # used to be silent
    assert "written again from this process's copy" in caplog.text
    assert db.exists()
    # another process opening the path sees the whole session, not an empty one
    other = loopguard.Guard.from_dict(RULES, store=SqliteStore(db))
    assert [e.seq for e in other.session("s").history()] == [1, 2, 3]
    assert _calls(other, 1) == ["breaker"]


def test_a_replaced_sqlite_file_keeps_what_another_process_wrote_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_module, "_CHECK_FILE_S", 0.0)
    db = tmp_path / "state.db"
    first = loopguard.Guard.from_dict(RULES, store=SqliteStore(db))
    _calls(first, 1)
    _delete(db)
    second = loopguard.Guard.from_dict(RULES, store=SqliteStore(db))  # a new file at the path
    second.session("other").before_call("write", {"path": "b"})
    _calls(first, 1)
    third = loopguard.Guard.from_dict(RULES, store=SqliteStore(db))
    assert [e.tool for e in third.session("other").history()] == ["write"]
    assert [e.seq for e in third.session("s").history()] == [1, 2]


def test_a_record_that_expired_is_not_brought_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    guard = loopguard.Guard.from_dict(RULES, store=SqliteStore(tmp_path / "s.db", ttl_s=0.05))
    _calls(guard, 2)
    time.sleep(0.1)
    with caplog.at_level(logging.WARNING, logger="loopguard"):
        assert _calls(guard, 1) == ["allow"]  # idle past ttl_s: a fresh session
    assert "vanished" not in caplog.text
    assert [e.seq for e in guard.session("s").history()] == [1]


@pytest.mark.slow  # the suite's Valkey server
def test_a_deleted_redis_record_is_written_again(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    redis = pytest.importorskip("redis")
    from loopguard.stores import RedisStore

    prefix = f"vanish{time.monotonic_ns()}:"
    guard = loopguard.Guard.from_dict(
        RULES, store=RedisStore.from_url(redis_url, key_prefix=prefix)
    )
    assert _calls(guard, 2) == ["allow", "allow"]
    client = redis.Redis.from_url(redis_url)
    try:
        assert client.delete(prefix + "s") == 1  # what FLUSHALL does to this session
        with caplog.at_level(logging.WARNING, logger="loopguard"):
            assert _calls(guard, 1) == ["critical"]
        assert "vanished while this process held it" in caplog.text
        assert client.exists(prefix + "s") == 1
        other = loopguard.Guard.from_dict(
            RULES, store=RedisStore.from_url(redis_url, key_prefix=prefix)
        )
        assert [e.seq for e in other.session("s").history()] == [1, 2, 3]
    finally:
        for key in client.scan_iter(match=prefix + "*"):
            client.delete(key)
        client.close()


def test_the_file_check_is_throttled(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "t.db")
    guard = loopguard.Guard.from_dict(RULES, store=store)
    _calls(guard, 1)
    backend = store.backend
    checked = []
    real = backend._identity
    backend._identity = lambda: checked.append(1) or real()  # type: ignore[method-assign]
    start = time.monotonic()
    _calls(guard, 20)  # 40 statements: one stat() per 0.25 s at most, not one each
    elapsed = time.monotonic() - start
    assert len(checked) <= 1 + elapsed / sqlite_module._CHECK_FILE_S
