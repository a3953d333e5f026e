"""`loopguard hook` start-up: from process start to answer, against a bare Python start.

Each agent runs the hook as a new process on every tool call, so what counts is the whole
process: interpreter start, imports, the guard from its cache, the session's state from
hooks.db, one decision, the answer. The baseline is `python -c "import json, sqlite3"` with
the same interpreter, measured in the same run, interleaved with the hook runs (so machine
load moves both). Targets (issue 20): median at most 5x the baseline, p95 at most 8x.

Rows, each with the hook server (the default: a warm server answers, see
loopguard.hooks.server) and without it (`LOOPGUARD_HOOK_SERVER=off`: every event a one-shot
process that loads the guard from the start-up cache):
- `pre`: a PreToolUse event of a new call in a warm session (cache and state file exist);
- `post`: the PostToolUse event of that call;
- `repeat`: a PreToolUse of a call the default rules block (a repeated failing command);
- `cold`: one-shot only: the first event after the start-up cache was deleted (the slow
  path, once after every change of the rules or the installed plugins).

Usage: python benchmarks/hook_bench.py [--runs N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_MEDIAN = 5.0
TARGET_P95 = 8.0


def _event(name: str, n: int, command: str, **extra: Any) -> bytes:
    body = {
        "session_id": "bench-session",
        "hook_event_name": name,
        "cwd": "/",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": f"toolu_{n}",
        **extra,
    }
    return json.dumps(body).encode()


def _loopguard() -> list[str]:
    """The installed console script beside this interpreter, else `python -m loopguard`."""
    script = Path(sys.executable).with_name("loopguard")
    return [str(script)] if script.exists() else [sys.executable, "-m", "loopguard"]


def _time(command: list[str], stdin: bytes, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, input=stdin, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{command} exited {done.returncode}: {done.stderr.decode()[:400]}")
    return elapsed


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def measure(runs: int, server: bool) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="lg-bench-"))
    env = dict(os.environ)
    env.update(
        XDG_STATE_HOME=str(home / "state"),
        XDG_CACHE_HOME=str(home / "cache"),
        XDG_RUNTIME_DIR=str(home / "run"),
        HOME=str(home),
        LOOPGUARD_HOOK_SERVER="on" if server else "off",
        LOOPGUARD_HOOK_SERVER_IDLE="30",
    )
    for name in ("LOOPGUARD_RULES", "LOOPGUARD_STORE", "CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"):
        env.pop(name, None)
    hook = [*_loopguard(), "hook", "claude"]
    bare = [sys.executable, "-c", "import json, sqlite3"]
    try:
        _time(hook, _event("UserPromptSubmit", 0, "", prompt="benchmark"), env)  # warm up
        if server:  # the first event started the server: wait until it listens
            deadline = time.monotonic() + 20
            while not list((home / "run").glob("loopguard/hook-*.sock")):
                if time.monotonic() > deadline:
                    raise SystemExit("the hook server did not start")
                time.sleep(0.05)
        samples: dict[str, list[float]] = {"baseline": [], "pre": [], "post": [], "repeat": []}
        cold: list[float] = []
        for n in range(1, runs + 1):
            samples["baseline"].append(_time(bare, b"", env))
            command = f"echo step {n}"
            samples["pre"].append(_time(hook, _event("PreToolUse", n, command), env))
            samples["post"].append(
                _time(hook, _event("PostToolUse", n, command, tool_response={"stdout": "ok"}), env)
            )
            failing = _event("PreToolUse", 10_000 + n, "make build")
            samples["repeat"].append(_time(hook, failing, env))
            _time(
                hook,
                _event("PostToolUseFailure", 10_000 + n, "make build", error="Exit code 2"),
                env,
            )
            _time(hook, _event("PostToolBatch", n, ""), env)
            if not server and n % max(1, runs // 5) == 0:
                shutil.rmtree(home / "cache", ignore_errors=True)
                cold.append(_time(hook, _event("PreToolUse", 20_000 + n, f"ls {n}"), env))
        base = statistics.median(samples["baseline"])
        rows = {}
        for name in ("pre", "post", "repeat"):
            values = samples[name]
            rows[name] = {
                "median_s": statistics.median(values),
                "p95_s": _p95(values),
                "median_ratio": statistics.median(values) / base,
                "p95_ratio": _p95(values) / base,
            }
        if cold:
            rows["cold"] = {
                "median_s": statistics.median(cold),
                "p95_s": _p95(cold),
                "median_ratio": statistics.median(cold) / base,
                "p95_ratio": _p95(cold) / base,
            }
        return {"baseline_median_s": base, "runs": runs, "rows": rows}
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args()
    results = {}
    print(f"{'mode':<9} {'row':<7} {'median':>8} {'p95':>8} {'median ×':>9} {'p95 ×':>6}  ok")
    for mode, server in (("server", True), ("one-shot", False)):
        result = results[mode] = measure(max(2, args.runs), server)
        for name, row in result["rows"].items():
            ok = row["median_ratio"] <= TARGET_MEDIAN and row["p95_ratio"] <= TARGET_P95
            verdict = "(once per change)" if name == "cold" else "yes" if ok else "NO"
            print(
                f"{mode:<9} {name:<7} {row['median_s'] * 1000:>6.0f}ms "
                f"{row['p95_s'] * 1000:>6.0f}ms {row['median_ratio']:>9.2f} "
                f"{row['p95_ratio']:>6.2f}  {verdict}"
            )
        base = result["baseline_median_s"] * 1000
        print(f"{mode:<9} baseline (python -c 'import json, sqlite3'): {base:.0f} ms")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
