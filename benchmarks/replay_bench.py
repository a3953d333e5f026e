"""Replay throughput and memory: generated event logs of up to 100,000 tool calls.

Writes loopguard event logs (JSONL) to a temporary directory (a user turn every 10 calls;
varied tools and arguments with some repeats and polls, so detectors have work to do),
replays each through `loopguard.replay.replayer.Replayer` with the default rules, and reports:
- calls per second of CPU time for a 100,000-call log (timed without tracemalloc);
- peak traced memory (tracemalloc) while replaying logs of 4,000 and 20,000 calls, and the
  ratio long/short: reading streams line by line, so the peak must not grow with the log's
  length (budget: under 1.5x for a 5x longer log). Under tracemalloc a call costs about three
  times as much, which is why these logs are shorter than the throughput one.

    python benchmarks/replay_bench.py           # full run
    python -c "import replay_bench; replay_bench.run(small=True)"   # quick (a tenth of each)
"""

from __future__ import annotations

import json
import random
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import loopguard
from loopguard.replay.replayer import Replayer, SessionSummary

TOOLS = ("read_file", "grep", "list_dir", "run_tests", "edit_file", "command_status")


def write_log(path: Path, calls: int, seed: int = 7) -> None:
    """A realistic-looking event log: one session, runs of 1,000 calls, a turn every 10 calls."""
    rng = random.Random(seed)
    with path.open("w") as fh:
        for i in range(calls):
            run = f"run-{i // 1000}"
            if i % 10 == 0:
                fh.write(
                    json.dumps({"event": "user_message", "run_id": run, "text": f"next step {i}"})
                    + "\n"
                )
            tool = rng.choice(TOOLS)
            args: dict[str, Any] = {"path": f"src/module_{rng.randint(0, 400)}.py"}
            if tool == "edit_file":
                args["new"] = (
                    f"value_{i} = compute(value_{i - 1}, strict=True)  # refactor step {i}"
                )
            elif tool == "command_status":
                args = {"command_id": f"cmd_{i // 50}"}
            result = f"{tool} output {rng.randint(0, 3) if tool == 'command_status' else i}"
            fh.write(
                json.dumps(
                    {
                        "event": "assistant_message",
                        "run_id": run,
                        "tool_calls": [{"id": f"c{i}", "name": tool, "arguments": args}],
                    }
                )
                + "\n"
            )
            fh.write(
                json.dumps(
                    {"event": "tool_result", "run_id": run, "call_id": f"c{i}", "content": result}
                )
                + "\n"
            )


def replay(path: Path) -> int:
    """Replay one file; returns the number of calls fed to the guard."""
    replayer = Replayer(loopguard.Guard.default())
    return sum(r.calls for r in replayer.run([str(path)]) if isinstance(r, SessionSummary))


def peak_memory(path: Path) -> int:
    tracemalloc.start()
    try:
        replay(path)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def run(small: bool = False) -> list[dict[str, Any]]:
    """Rows in the shape of benchmarks/run.py: measure, ratio (the value), budget, ok, note."""
    sizes = (10_000, 400, 2_000) if small else (100_000, 4_000, 20_000)
    timed_calls, short_calls, long_calls = sizes
    with tempfile.TemporaryDirectory() as tmp:
        timed, short, long = (Path(tmp) / f"{n}.jsonl" for n in ("timed", "short", "long"))
        for path, calls in ((timed, timed_calls), (short, short_calls), (long, long_calls)):
            write_log(path, calls)
        size_mb = timed.stat().st_size / 1e6
        started = time.process_time()  # CPU time: a busy machine's waits are not the reader's
        fed = replay(timed)
        elapsed = time.process_time() - started
        assert fed == timed_calls, (fed, timed_calls)
        peak_short, peak_long = peak_memory(short), peak_memory(long)
    growth = peak_long / peak_short
    return [
        {
            "measure": f"replay throughput, {timed_calls:,} calls (calls/s)",
            "ratio": round(fed / elapsed),
            "budget": None,
            "ok": None,
            "note": f"{size_mb:.1f} MB event log in {elapsed:.2f} s of CPU time",
        },
        {
            "measure": f"replay peak memory, {long_calls:,} calls (KiB)",
            "ratio": round(peak_long / 1024),
            "budget": None,
            "ok": None,
            "note": f"{short_calls:,} calls: {peak_short / 1024:.0f} KiB (tracemalloc)",
        },
        {
            "measure": f"replay peak memory growth, {long_calls:,} vs {short_calls:,} calls",
            "ratio": round(growth, 2),
            "budget": 1.5,
            "ok": growth < 1.5,
            "note": "must stay flat: the reader streams line by line",
        },
    ]


def main() -> None:
    for row in run():
        budget = (
            ""
            if row["budget"] is None
            else f"  (budget {row['budget']}: {'ok' if row['ok'] else 'MISSED'})"
        )
        print(f"{row['measure']}: {row['ratio']:,}{budget}  — {row['note']}")


if __name__ == "__main__":
    main()
