"""loopguard benchmark runner: `python benchmarks/run.py [--json OUT] [--small] [--only G]`.

Prints one table, a row as soon as it is measured. Every figure is a ratio against a
baseline measured in the same process, interleaved, best of several repeats of the CPU
time of each (a busy machine slows both alike; per-call rows keep the best time of each
chunk of 250 calls), and is marked against the budget of the speed issue (issue 23): per
call, default rules, distinct 1.8, repeat 1.0, ping_pong 1.9, big_args 1.5, mixed 2.0
times the floor; with every detector on, at most 1.25 times the default rules' figure of
the same trace in the same run. A group that cannot run (a missing extra) prints a row
saying why, and the others still run. `--small` runs tiny inputs (the test suite's smoke
test); its figures prove the runner works, not the budget.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import best_by_chunk, best_pair, floor, minimal_guard  # noqa: E402
from traces import NAMES, load  # noqa: E402

import loopguard  # noqa: E402

ALL_ON = {"version": 1, "loop_detection": {"enabled": True}}
TURN_EVERY = 10  # calls per user turn in the traces (a turn is a handful of rounds)
# Issue 23's budgets, × the floor, default rules; all detectors on: ALL_ON_FACTOR × default.
BUDGETS = {"distinct": 1.8, "repeat": 1.0, "ping_pong": 1.9, "big_args": 1.5, "mixed": 2.0}
ALL_ON_FACTOR = 1.25
MEMORY_SESSIONS = 10_000  # idle sessions the memory row holds (the figure is per session)


def chunk_of(name: str) -> int:
    """Calls per timed chunk of a trace: 25 of the ~10 KB writes, else 250."""
    return 25 if name == "big_args" else 250


def detector_ids() -> list[str]:
    """Every registered detector, as the effective rules list them."""
    return list(loopguard.Guard.default().session("ids").config["detectors"])


def only(detector: str | None) -> loopguard.Guard:
    """A guard with every detector off but `detector` (None: the engine alone)."""
    rules = {i: {"enabled": i == detector} for i in detector_ids()}
    return loopguard.Guard.from_dict({"version": 1, "detectors": rules})


def drive(guard: loopguard.Guard, trace: list[dict[str, Any]], sid: str = "bench") -> None:
    """Feed a trace through before_call + after_call, a new turn every TURN_EVERY calls."""
    session = guard.session(sid)
    for i, call in enumerate(trace):
        if i % TURN_EVERY == 0:
            session.begin_turn(())
        cid = f"c{i}"
        session.before_call(call["tool"], call["args"], call_id=cid)
        session.after_call(call["tool"], call["args"], result=call["result"], call_id=cid)


def drive_from(session: Any, trace: list[dict[str, Any]], first: int) -> None:
    """`drive` of a part of a trace whose first call has index `first`, on a given session."""
    for i, call in enumerate(trace, first):
        if i % TURN_EVERY == 0:
            session.begin_turn(())
        cid = f"c{i}"
        session.before_call(call["tool"], call["args"], call_id=cid)
        session.after_call(call["tool"], call["args"], result=call["result"], call_id=cid)


def fresh_sessions(
    guard: loopguard.Guard, trace: list[dict[str, Any]], prefix: str
) -> Callable[[], None]:
    """A subject that drives `trace` through a new session of `guard` on every call."""
    counter = itertools.count()
    return lambda: drive(guard, trace, f"{prefix}{next(counter)}")


def row(measure: str, ratio: float, budget: float | None, note: str = "") -> dict[str, Any]:
    ok = None if budget is None else ratio <= budget
    return {"measure": measure, "ratio": round(ratio, 2), "budget": budget, "ok": ok, "note": note}


WIDTH = 74  # measure column of the printed table


def yield_row(r: dict[str, Any]) -> dict[str, Any]:
    """Print a row as soon as it is measured (a long run shows its progress) and return it."""
    print_row(r)
    return r


def skipped(group: str, why: str) -> dict[str, Any]:
    """The row of a group that could not run, saying why."""
    return {"measure": f"{group} (group)", "ratio": None, "budget": None, "ok": None, "note": why}


def per_call_rows(scale: float, repeats: int) -> list[dict[str, Any]]:
    rows = []
    default_figure: dict[str, float] = {}
    for rules_name, rules in (("default rules", {"version": 1}), ("all detectors on", ALL_ON)):
        guard = loopguard.Guard.from_dict(rules)  # compiled once
        counter = itertools.count()
        for name in NAMES:
            trace = load(name, scale)
            base, subj = best_by_chunk(
                trace,
                chunk_of(name),
                repeats,
                floor,
                lambda: partial(drive_from, guard.session(f"s{next(counter)}")),  # noqa: B023
            )
            ratio = subj / base
            note = (
                f"{subj / len(trace) * 1e6:.1f} µs/call vs floor "
                f"{base / len(trace) * 1e6:.1f} µs/call"
            )
            if name in default_figure:  # all on: against the default rules' figure
                limit = round(ALL_ON_FACTOR * default_figure[name], 2)
                note += f"; {ratio / default_figure[name]:.2f}× the default rules' figure"
            else:
                default_figure[name] = ratio
                limit = BUDGETS[name]
            rows.append(yield_row(row(f"{name} — {rules_name} (× floor)", ratio, limit, note)))
    rows.extend(cost_rows(scale, repeats))
    return rows


def cost_rows(scale: float, repeats: int) -> list[dict[str, Any]]:
    """What the per-call figures are made of, per trace: the lower bound of any Python guard
    with this API (`harness.MinimalGuard`), and loopguard's engine with every detector off
    (turns, call pairing, outcome rules, volatile fields; the detectors' share is the rest)."""
    alone = only(None)
    counter = itertools.count()
    subjects = (
        ("lower bound: a minimal Python guard", minimal_guard),
        (
            "engine alone, every detector off",
            lambda: partial(drive_from, alone.session(f"e{next(counter)}")),
        ),
    )
    rows = []
    for name in NAMES:
        trace = load(name, scale)
        for label, start in subjects:
            base, subj = best_by_chunk(trace, chunk_of(name), repeats, floor, start)
            note = f"{subj / len(trace) * 1e6:.1f} µs/call; a part of the figures above, no budget"
            rows.append(yield_row(row(f"{name} — {label} (× floor)", subj / base, None, note)))
    return rows


def history_rows(scale: float, repeats: int) -> list[dict[str, Any]]:
    rows = []
    for name in ("repeat", "ping_pong", "mixed"):
        trace = load(name, scale)
        small_guard, large_guard = (
            loopguard.Guard.from_dict(
                {"version": 1, "loop_detection": {"enabled": True, "history_size": size}}
            )
            for size in (30, 3000)
        )
        small, large = best_pair(
            fresh_sessions(small_guard, trace, "h"),
            fresh_sessions(large_guard, trace, "h"),
            repeats,
        )
        rows.append(yield_row(row(f"history 3,000 vs 30 — {name}, all on (×)", large / small, 1.5)))
    return rows


def sessions_rows(scale: float, repeats: int) -> list[dict[str, Any]]:
    many = max(100, int(100_000 * scale))
    calls = load("mixed", scale)[:2000]
    guards = {}
    for count in (10, many):
        guard = loopguard.Guard.default()
        for i in range(count):  # live sessions, each with a little history
            s = guard.session(f"u{i}")
            s.begin_turn(())
            s.before_call("read_file", {"path": f"f{i}"}, call_id="x")
            s.after_call("read_file", {"path": f"f{i}"}, result="ok", call_id="x")
        guards[count] = guard

    def spread(count: int) -> Any:
        guard = guards[count]

        def run() -> None:
            for i, call in enumerate(calls):
                s = guard.session(f"u{(i * 7919) % count}")
                s.before_call(call["tool"], call["args"], call_id=str(i))
                s.after_call(call["tool"], call["args"], result=call["result"], call_id=str(i))

        return run

    few, lots = best_pair(spread(10), spread(many), repeats)
    return [yield_row(row(f"{many:,} vs 10 live sessions, per call (×)", lots / few, 1.5))]


def memory_rows(scale: float) -> list[dict[str, Any]]:
    count = max(1000, int(MEMORY_SESSIONS * scale))
    guard = loopguard.Guard.default()
    big = "x" * 20_000

    def idle_session(sid: str) -> None:
        s = guard.session(sid)
        s.begin_turn(())
        for j in range(30):  # a full history of 30 calls, with large arguments
            if j % 6 == 0:
                s.begin_turn(())
            args = {"path": f"f{j}", "content": big if j % 10 == 0 else "small"}
            s.before_call("write_file", args, call_id=f"{j}")
            s.after_call("write_file", args, result={"ok": j}, call_id=f"{j}")
        s.begin_turn(())  # idle between turns

    idle_session("warm")  # what the first session loads once (NumPy, compiled patterns) is no
    # session's memory: loaded before counting, so the figure is the same for any count
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(count):
        idle_session(f"m{i}")
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    per = used / count
    ok = per <= 12 * 1024
    return [
        yield_row(
            {
                "measure": f"memory per idle session, history 30, {count:,} sessions (bytes)",
                "ratio": round(per),
                "budget": 12 * 1024,
                "ok": ok,
                "note": "absolute bytes (tracemalloc)",
            }
        )
    ]


def external_rows(small: bool) -> list[dict[str, Any]]:
    """Rows from the intent and replay benchmarks, when present."""
    rows: list[dict[str, Any]] = []
    for module in ("intent_bench", "replay_bench"):
        try:
            mod = __import__(module)
        except ImportError as exc:
            rows.append(yield_row(skipped(module, f"not available: {exc}")))
            continue
        rows.extend(yield_row(r) for r in mod.run(small=small))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="OUT", help="also write the table as JSON")
    parser.add_argument("--small", action="store_true", help="tiny inputs (smoke test)")
    parser.add_argument(
        "--only",
        choices=("calls", "history", "sessions", "memory", "stores", "other", "otel"),
        action="append",
        help="run only these groups (repeatable)",
    )
    args = parser.parse_args(argv)
    scale, repeats = (0.02, 2) if args.small else (1.0, 5)
    groups = {
        "calls": lambda: per_call_rows(scale, repeats),
        "history": lambda: history_rows(scale, repeats),
        "sessions": lambda: sessions_rows(scale, repeats),
        "memory": lambda: memory_rows(scale),
        "stores": lambda: [yield_row(r) for r in __import__("store_bench").run(small=args.small)],
        "other": lambda: external_rows(args.small),
        # in a process of its own: its first rows need OpenTelemetry not imported (the
        # stores group's redis client imports it), and it sets OpenTelemetry's global providers
        "otel": lambda: [yield_row(r) for r in in_child("otel_bench", args.small)],
    }
    print_header()
    rows: list[dict[str, Any]] = []
    for name, fn in groups.items():
        if args.only and name not in args.only:
            continue
        try:
            rows.extend(fn())
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - one group's failure must not lose the others
            rows.append(yield_row(skipped(name, f"failed: {type(exc).__name__}: {exc}")))
    print(machine(), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
    return 0


def in_child(module: str, small: bool) -> list[dict[str, Any]]:
    """`module.run(small=...)` in a fresh interpreter (nothing this process imported there)."""
    here = str(Path(__file__).resolve().parent)
    code = (
        f"import json, sys; sys.path.insert(0, {here!r}); import {module}; "
        f"print(json.dumps({module}.run(small={small!r})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{module} exited with {done.returncode}: {last}")
    rows: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return rows


def machine() -> str:
    """Where the figures were measured (a ratio can depend on the processor and libraries)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next(
                (line.split(":", 1)[1].strip() for line in info if line.startswith("model name")),
                cpu,
            )
    except OSError:
        pass
    load = ""
    if hasattr(os, "getloadavg"):
        load = ", load average " + " ".join(f"{v:.1f}" for v in os.getloadavg())
    try:
        import numpy

        extra = f", numpy {numpy.__version__}"
    except ImportError:
        extra = ", no numpy"
    return (
        f"# {cpu}, {os.cpu_count()} CPUs{load}; Python {platform.python_version()}{extra}; "
        "times are CPU time, best of several interleaved repeats"
    )


def print_header() -> None:
    print(f"{'measure'.ljust(WIDTH)}  {'value':>9}  {'budget':>8}  ok   note", flush=True)


def print_row(r: dict[str, Any]) -> None:
    value = "-" if r["ratio"] is None else f"{r['ratio']:,}"
    budget = "-" if r["budget"] is None else f"{r['budget']:,}"
    mark = {True: "yes", False: "NO", None: "-"}[r["ok"]]
    print(
        f"{r['measure'].ljust(WIDTH)}  {value:>9}  {budget:>8}  {mark:<4} {r.get('note', '')}",
        flush=True,
    )


def print_table(rows: list[dict[str, Any]]) -> None:
    print_header()
    for r in rows:
        print_row(r)


if __name__ == "__main__":
    sys.exit(main())
