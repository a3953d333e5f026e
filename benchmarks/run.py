"""loopguard benchmark runner: `python benchmarks/run.py [--json OUT] [--small]`.

Prints one table. Every figure is a ratio against a baseline measured in the
same process, interleaved, best of several repeats, and is marked against the
budget of the speed issue. `--small` runs tiny inputs (the test suite's smoke
test); its figures prove the runner works, not the budget.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import best_pair, floor  # noqa: E402
from traces import NAMES, load  # noqa: E402

import loopguard  # noqa: E402

ALL_ON = {"version": 1, "loop_detection": {"enabled": True}}
TURN_EVERY = 10  # calls per user turn in the traces (a turn is a handful of rounds)


def drive(guard: loopguard.Guard, trace: list[dict[str, Any]], sid: str = "bench") -> None:
    """Feed a trace through before_call + after_call, a new turn every TURN_EVERY calls."""
    session = guard.session(sid)
    for i, call in enumerate(trace):
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


def per_call_rows(scale: float, repeats: int) -> list[dict[str, Any]]:
    rows = []
    for rules_name, rules, budget in (
        ("default rules", {"version": 1}, 2.0),
        ("all detectors on", ALL_ON, 2.5),
    ):
        guard = loopguard.Guard.from_dict(rules)
        for name in NAMES:
            trace = load(name, scale)
            subject = fresh_sessions(guard, trace, "s")  # the guard compiled once
            base, subj = best_pair(partial(floor, trace), subject, repeats)
            limit = 8.0 if name == "big_args" else budget
            rows.append(
                row(
                    f"{name} — {rules_name} (× floor)",
                    subj / base,
                    limit,
                    f"{subj / len(trace) * 1e6:.1f} µs/call vs floor "
                    f"{base / len(trace) * 1e6:.1f} µs/call",
                )
            )
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
        rows.append(row(f"history 3,000 vs 30 — {name}, all on (×)", large / small, 1.5))
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
    return [row(f"{many:,} vs 10 live sessions, per call (×)", lots / few, 1.5)]


def memory_rows(scale: float) -> list[dict[str, Any]]:
    count = max(1000, int(100_000 * scale))
    guard = loopguard.Guard.default()
    big = "x" * 20_000
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(count):
        s = guard.session(f"m{i}")
        s.begin_turn(())
        for j in range(30):  # a full history of 30 calls, with large arguments
            if j % 6 == 0:
                s.begin_turn(())  # also keeps the fuzzy window empty at the end of the turn
            args = {"path": f"f{j}", "content": big if j % 10 == 0 else "small"}
            s.before_call("write_file", args, call_id=f"{j}")
            s.after_call("write_file", args, result={"ok": j}, call_id=f"{j}")
        s.begin_turn(())  # idle between turns: fuzzy window empty
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    per = used / count
    ok = per <= 12 * 1024
    return [
        {
            "measure": f"memory per idle session, history 30, {count:,} sessions (bytes)",
            "ratio": round(per),
            "budget": 12 * 1024,
            "ok": ok,
            "note": "absolute bytes",
        }
    ]


def external_rows(small: bool) -> list[dict[str, Any]]:
    """Rows from the intent and replay benchmarks, when present."""
    rows: list[dict[str, Any]] = []
    for module in ("intent_bench", "replay_bench"):
        try:
            mod = __import__(module)
        except ImportError as exc:
            rows.append(
                {
                    "measure": module,
                    "ratio": None,
                    "budget": None,
                    "ok": None,
                    "note": f"not available: {exc}",
                }
            )
            continue
        rows.extend(mod.run(small=small))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="OUT", help="also write the table as JSON")
    parser.add_argument("--small", action="store_true", help="tiny inputs (smoke test)")
    parser.add_argument(
        "--only",
        choices=("calls", "history", "sessions", "memory", "stores", "other", "otel"),
        action="append",
        help="run only these groups",
    )
    args = parser.parse_args(argv)
    scale, repeats = (0.02, 2) if args.small else (1.0, 5)
    groups = {
        "calls": lambda: per_call_rows(scale, repeats),
        "history": lambda: history_rows(scale, repeats),
        "sessions": lambda: sessions_rows(scale, repeats),
        "memory": lambda: memory_rows(scale),
        "stores": lambda: __import__("store_bench").run(small=args.small),
        "other": lambda: external_rows(args.small),
        # last: it imports OpenTelemetry and sets its global meter provider
        "otel": lambda: __import__("otel_bench").run(small=args.small),
    }
    rows: list[dict[str, Any]] = []
    for name, fn in groups.items():
        if args.only and name not in args.only:
            continue
        rows.extend(fn())
    print_table(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
    return 0


def print_table(rows: list[dict[str, Any]]) -> None:
    width = max(len(r["measure"]) for r in rows) if rows else 10
    print(f"{'measure'.ljust(width)}  {'value':>9}  {'budget':>8}  ok   note")
    for r in rows:
        value = "-" if r["ratio"] is None else f"{r['ratio']:,}"
        budget = "-" if r["budget"] is None else f"{r['budget']:,}"
        mark = {True: "yes", False: "NO", None: "-"}[r["ok"]]
        print(
            f"{r['measure'].ljust(width)}  {value:>9}  {budget:>8}  {mark:<4} {r.get('note', '')}"
        )


if __name__ == "__main__":
    sys.exit(main())
