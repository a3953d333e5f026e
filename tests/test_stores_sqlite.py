"""SqliteStore: several processes on one machine, restarts, fail_mode, the rules' `store:` block."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from pathlib import Path

import pytest
from store_checks import RULES, chains, read_logs, replay, spawn

import loopguard
from loopguard.errors import RulesError
from loopguard.stores import RedisStore, SqliteStore, store_from_config


@pytest.mark.slow
def test_four_processes_match_one_process(tmp_path: Path) -> None:
    store = {"path": str(tmp_path / "state.db")}
    sessions = [f"s{i}" for i in range(10)]
    go = tmp_path / "go"
    procs = [spawn(tmp_path, f"w{w}", store, sessions, 300, seed=w + 11, go=go) for w in range(4)]
    go.touch()
    for proc, _ in procs:
        assert proc.wait(300) == 0
    rows = read_logs([log for _, log in procs])
    assert sum(1 for r in rows if r["op"] == "before") == 1200
    memory = loopguard.Guard.from_dict(RULES)
    shared = loopguard.Guard.from_dict(RULES, store=SqliteStore(tmp_path / "state.db"))
    problems = []
    for sid, chain in chains(rows).items():
        problems += replay(chain, memory, sid)
        assert [e.to_dict() for e in shared.session(sid).history()] == [
            e.to_dict() for e in memory.session(sid).history()
        ]
    assert not problems, problems[:5]


@pytest.mark.slow
def test_restart_continues_every_session(tmp_path: Path) -> None:
    store = {"path": str(tmp_path / "state.db")}
    for part in range(2):
        proc, log = spawn(tmp_path, "life", store, ["a", "b", "c"], 150, seed=5, start=150 * part)
        assert proc.wait(120) == 0
    memory = loopguard.Guard.from_dict(RULES)
    problems = [
        p for sid, chain in chains(read_logs([log])).items() for p in replay(chain, memory, sid)
    ]
    assert not problems, problems[:5]


def test_rules_store_block_relative_path_and_round_trips(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("version: 1\nstore: {path: sessions.db, ttl_s: 3600}\n")
    guard = loopguard.Guard.from_file(rules)
    assert isinstance(guard.store, SqliteStore)
    session = guard.session("x")
    session.before_call("read", {"p": 1}, call_id="1")
    session.after_call("read", {"p": 1}, result="r", call_id="1")
    assert (tmp_path / "sessions.db").exists()
    before = guard.store.round_trips
    session.before_call("read", {"p": 2}, call_id="2")
    session.after_call("read", {"p": 2}, result="r", call_id="2")
    assert guard.store.round_trips - before == 2
    with contextlib.closing(sqlite3.connect(tmp_path / "sessions.db")) as conn:
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    again = loopguard.Guard.from_file(rules).session("x")
    assert [e.seq for e in again.history()] == [1, 2]
    assert len(guard.store) == 1


def test_unwritable_store_follows_fail_mode(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = tmp_path / "no" / "such" / "dir" / "state.db"
    with caplog.at_level(logging.WARNING, logger="loopguard"):
        opened = loopguard.Guard.default(store=SqliteStore(missing, retry_s=60)).session("s")
        assert [opened.before_call("read", {}, call_id=str(i)).action for i in range(3)] == [
            "allow"
        ] * 3
        assert opened.after_call("read", {}, result="x", call_id="0").action == "allow"
        assert opened.begin_turn([{"role": "user", "content": "hi"}]) is None
        assert opened.history() == []
    assert len([r for r in caplog.records if "unavailable" in r.getMessage()]) == 1
    closed = loopguard.Guard.from_dict(
        {"version": 1, "aggregator": {"fail_mode": "closed"}}, store=SqliteStore(missing)
    )
    decision = closed.session("s").before_call("read", {}, call_id="1")
    assert (
        decision.blocked
        and decision.detector == "store"
        and "fail_mode is closed" in decision.message
    )


def test_rules_never_hold_a_password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nstore: {url: 'redis://user:hunter2@localhost:6379/0'}\n")
    with pytest.raises(RulesError):
        loopguard.Guard.from_file(bad)
    with pytest.raises(RulesError, match="password"):
        store_from_config({"url": "redis://user:hunter2@localhost:6379/0"})
    monkeypatch.setenv("LG_TEST_PW", "s3cret")
    store = store_from_config(
        {"url": "redis://user@localhost:1/0", "password_env": "LG_TEST_PW", "key_prefix": "p:"}
    )
    assert isinstance(store, RedisStore)
    assert store.backend.client.connection_pool.connection_kwargs["password"] == "s3cret"
    with pytest.raises(RulesError):
        loopguard.Guard.from_yaml("version: 1\nstore: {path: a.db, url: 'redis://x'}\n")


def test_a_dropped_backend_closes_its_connection(tmp_path: Path) -> None:
    """Python 3.13 warns about (and filterwarnings=error fails on) an unclosed connection."""
    import gc

    from loopguard.stores.sqlite import SqliteBackend

    backend = SqliteBackend(tmp_path / "s.db")
    conn = backend._db()
    del backend
    gc.collect()
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")
