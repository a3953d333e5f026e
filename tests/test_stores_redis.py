"""RedisStore against a real Valkey (or Redis) server started by the tests.

Four worker processes share 50 sessions, 2,000 calls each (8,000 calls, about 17,000
writes): the store's order of writes, replayed by one in-memory process, gives every
decision and the final histories. Then: round trips per call, a worker killed with SIGKILL,
the server stopped mid-run (fail_mode open and closed), restarts, expiry and damaged state.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
from pathlib import Path

import pytest
from store_checks import RULES, chains, read_logs, replay, spawn
from store_servers import private_server

import loopguard

redis = pytest.importorskip("redis")
from loopguard.stores import RedisStore  # noqa: E402

pytestmark = pytest.mark.slow  # a real Valkey server and worker processes

WORKERS, SESSIONS, CALLS = 4, 50, 2000


def _store(url: str, **kwargs: object) -> RedisStore:
    return RedisStore.from_url(
        url,
        key_prefix=kwargs.pop("key_prefix", f"t{time.monotonic_ns()}:"),  # type: ignore[arg-type]
        **kwargs,
    )  # type: ignore[arg-type]


def test_four_workers_match_one_process(redis_url: str, tmp_path: Path) -> None:
    prefix = f"fleet{time.monotonic_ns()}:"
    store = {"url": redis_url, "key_prefix": prefix, "timeout_s": 5}
    sessions = [f"s{i}" for i in range(SESSIONS)]
    go = tmp_path / "go"
    procs = [
        spawn(tmp_path, f"w{w}", store, sessions, CALLS, seed=w + 1, go=go) for w in range(WORKERS)
    ]
    go.touch()
    for proc, _ in procs:
        assert proc.wait(300) == 0
    rows = read_logs([log for _, log in procs])
    assert sum(1 for r in rows if r["op"] == "before") == WORKERS * CALLS  # none lost
    per_session = chains(rows)  # none twice, none off the chain
    assert len(per_session) == SESSIONS
    memory = loopguard.Guard.from_dict(RULES)
    shared = loopguard.Guard.from_dict(
        RULES, store=RedisStore.from_url(redis_url, key_prefix=prefix)
    )
    problems: list[str] = []
    for sid, chain in per_session.items():
        problems += replay(chain, memory, sid)
        stored = [e.to_dict() for e in shared.session(sid).history()]
        assert stored == [e.to_dict() for e in memory.session(sid).history()], sid
    assert not problems, problems[:5]
    blocked = sum(1 for r in rows if r["decision"] and r["decision"]["action"] != "allow")
    assert blocked > 100  # the workload does loop: the comparison covers real decisions


def test_round_trips_per_call(redis_url: str) -> None:
    store = _store(redis_url)
    guard = loopguard.Guard.from_dict({"version": 1}, store=store)
    session = guard.session("rt")
    session.before_call("read", {"path": "a"}, call_id="c0")
    session.after_call("read", {"path": "a"}, result="x", call_id="c0")
    before = store.round_trips
    for i in range(1, 51):
        session.before_call("read", {"path": str(i)}, call_id=f"c{i}")
        session.after_call("read", {"path": str(i)}, result="x", call_id=f"c{i}")
    assert store.round_trips - before == 100  # two per before/after pair, warm


def test_sigkill_of_a_worker_mid_session(redis_url: str, tmp_path: Path) -> None:
    prefix = f"kill{time.monotonic_ns()}:"
    proc, log = spawn(
        tmp_path, "victim", {"url": redis_url, "key_prefix": prefix}, ["k"], 100_000, seed=7
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not log.exists() or log.read_text().count("\n") < 60):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    logged = sum(1 for r in read_logs([log]) if r["op"] == "before")
    started = time.monotonic()
    session = loopguard.Guard.from_dict(
        RULES, store=RedisStore.from_url(redis_url, key_prefix=prefix)
    ).session("k")
    decision = session.before_call("other", {}, call_id="after-kill")
    assert time.monotonic() - started < 1.0  # no lock to wait for
    assert logged + 1 <= decision.seq <= logged + 2  # the killed worker lost at most its last call
    seqs = [e.seq for e in session.history()]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))


def test_server_stopped_mid_run(caplog: pytest.LogCaptureFixture) -> None:
    server = private_server()
    try:
        opened = RedisStore.from_url(server.url, timeout_s=0.2, retry_s=0.05, fail_mode="open")
        closed = RedisStore.from_url(
            server.url, timeout_s=0.2, retry_s=0.05, fail_mode="closed", key_prefix="closed:"
        )
        s_open = loopguard.Guard.default(store=opened).session("o")
        s_closed = loopguard.Guard.default(store=closed).session("c")
        for i in range(3):
            assert s_open.before_call("read", {"i": i}, call_id=f"o{i}").action == "allow"
            s_open.after_call("read", {"i": i}, result="r", call_id=f"o{i}")
            s_closed.before_call("read", {"i": i}, call_id=f"c{i}")
        server.stop()
        with caplog.at_level(logging.WARNING, logger="loopguard"):
            decisions = []
            for i in range(5):
                decisions.append(s_open.before_call("read", {"path": "x"}, call_id=f"x{i}"))
                s_open.after_call("read", {"path": "x"}, result="same", call_id=f"x{i}")
                time.sleep(0.03)
            shut = s_closed.before_call("read", {"path": "x"}, call_id="y")
        assert [d.action for d in decisions] == [
            "allow"
        ] * 5  # not even the repeats: nothing recorded
        assert all(d.faults for d in decisions)
        assert shut.action == "critical" and shut.detector == "store" and shut.message
        outage_logs = [r for r in caplog.records if "unavailable" in r.getMessage()]
        assert len(outage_logs) == 2  # once per store and outage, not once per call
        server.start()
        time.sleep(0.1)
        back = s_open.before_call("read", {"i": 9}, call_id="o9")
        assert back.action == "allow" and back.seq == 4  # continues where it stopped
        assert s_closed.before_call("read", {"i": 9}, call_id="c9").seq == 4
    finally:
        server.close()


def test_restart_continues_every_session(redis_url: str, tmp_path: Path) -> None:
    prefix = f"restart{time.monotonic_ns()}:"
    store = {"url": redis_url, "key_prefix": prefix}
    sessions = ["a", "b", "c"]
    for part in range(2):  # two process lifetimes, one after the other
        proc, log = spawn(tmp_path, "life", store, sessions, 150, seed=3, start=150 * part)
        assert proc.wait(120) == 0
    rows = read_logs([log])
    memory = loopguard.Guard.from_dict(RULES)
    problems = [p for sid, chain in chains(rows).items() for p in replay(chain, memory, sid)]
    assert not problems, problems[:5]


def test_expiry_prefix_and_damaged_state(redis_url: str, caplog: pytest.LogCaptureFixture) -> None:
    prefix = f"ttl{time.monotonic_ns()}:"
    store = RedisStore.from_url(redis_url, key_prefix=prefix, ttl_s=0.3)
    session = loopguard.Guard.default(store=store).session("e")
    session.before_call("read", {}, call_id="1")
    client = redis.Redis.from_url(redis_url)
    assert client.keys(prefix + "*") == [(prefix + "e").encode()]
    assert 0 < client.pttl(prefix + "e") <= 300
    time.sleep(0.45)
    assert client.keys(prefix + "*") == []
    fresh = loopguard.Guard.default(store=RedisStore.from_url(redis_url, key_prefix=prefix))
    assert fresh.session("e").before_call("read", {}, call_id="2").seq == 1
    client.hset(prefix + "bad", mapping={"v": "5", "b": b"LGS\x09\x00[]"})
    with caplog.at_level(logging.ERROR, logger="loopguard"):
        closed = loopguard.Guard.default(
            store=RedisStore.from_url(redis_url, key_prefix=prefix, fail_mode="closed")
        )
        decision = closed.session("bad").before_call("read", {}, call_id="3")
    assert decision.action == "critical" and "format version 9" in decision.faults[0]
    assert any("cannot be read" in r.getMessage() for r in caplog.records)
    assert client.hget(prefix + "bad", "b") == b"LGS\x09\x00[]"  # left untouched


def test_async_turn_does_not_block_the_event_loop(redis_url: str) -> None:
    guard = loopguard.Guard.default(store=_store(redis_url))
    session = guard.session("async")
    loop_threads: set[int] = set()
    calls = iter(
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
                ],
            },
            {"role": "assistant", "content": "done"},
        ]
    )

    async def model(messages: object, tools_enabled: bool = True) -> object:
        loop_threads.add(threading.get_ident())
        return next(calls)

    original = session._run
    store_threads: set[int] = set()

    def spy(*args: object) -> object:
        store_threads.add(threading.get_ident())
        return original(*args)  # type: ignore[arg-type]

    session._run = spy  # type: ignore[method-assign]
    result = asyncio.run(
        loopguard.arun_turn(
            model, {"read": lambda args: "text"}, [{"role": "user", "content": "read it"}], session
        )
    )
    assert result.text == "done"
    assert store_threads and not (store_threads & loop_threads)
