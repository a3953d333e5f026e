"""The benchmark runner works end to end on tiny inputs (a smoke test: no timing is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs the benchmark runner and writes every trace

ROOT = Path(__file__).resolve().parents[1]


def test_runner_prints_and_writes_every_row(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--small", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(out.read_text("utf-8"))
    measures = [row["measure"] for row in rows]
    for name in ("distinct", "repeat", "ping_pong", "big_args", "mixed"):
        assert sum(m.startswith(name) for m in measures) == 2, name  # default and all-on
    assert any(m.startswith("history 3,000 vs 30") for m in measures)
    assert any("live sessions" in m for m in measures)
    assert any(m.startswith("memory per idle session") for m in measures)
    assert any("10,000 vs 30 keywords" in m for m in measures)
    assert any("replay" in m for m in measures)
    assert sum(m.startswith("otel plugin — ") for m in measures) == 9
    for row in rows:
        assert row["ratio"] is None or row["ratio"] > 0
        assert row["ok"] in (True, False, None)
    assert "measure" in done.stdout.splitlines()[0]


def test_traces_are_deterministic(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import traces
    finally:
        sys.path.pop(0)
    assert traces.load("mixed", 0.01) == traces.load("mixed", 0.01)
    first = traces.load("big_args", 0.01)
    assert len(first) == 20 and len(json.dumps(first[0]["args"])) > 10_000
    traces.write_all(tmp_path)
    lines = (tmp_path / "repeat.jsonl").read_text("utf-8").splitlines()
    assert len(lines) == 10_000 and set(json.loads(lines[0])) == {"tool", "args", "result"}
