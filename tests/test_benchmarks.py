"""The benchmark runner works end to end on tiny inputs (a smoke test: no timing is asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import loopguard

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
        # default, all on, the lower bound and the engine alone
        assert sum(m.startswith(name) for m in measures) == 4, name
        assert f"{name} — lower bound: a minimal Python guard (× floor)" in measures
        assert f"{name} — engine alone, every detector off (× floor)" in measures
    assert any(m.startswith("history 3,000 vs 30") for m in measures)
    assert any("live sessions" in m for m in measures)
    assert any(m.startswith("memory per idle session") for m in measures)
    assert any("10,000 vs 30 keywords" in m for m in measures)
    assert any("replay" in m for m in measures)
    assert sum(m.startswith("otel plugin — ") for m in measures) == 9
    assert any(m.startswith("SqliteStore vs MemoryStore") for m in measures)
    for row in rows:
        assert row["ratio"] is None or row["ratio"] > 0
        assert row["ok"] in (True, False, None)
        # a figure, or a row that says why there is none; no group failed
        assert row["ratio"] is not None or row["note"].startswith("not available"), row
    lines = done.stdout.splitlines()
    assert "measure" in lines[0]
    assert len(lines) == 1 + len(rows) + 1  # the header, each row as measured, the machine
    assert lines[-1].startswith("# ") and "Python" in lines[-1]


def test_runner_says_why_without_the_extras(tmp_path: Path) -> None:
    """Without the test extra (no redis client, no pytest for the Valkey helper, no
    OpenTelemetry) the stores and otel groups still report what they can and say what is
    missing; the run ends normally, with no traceback."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    for name in ("redis", "pytest", "opentelemetry"):
        (shadow / f"{name}.py").write_text(
            f"raise ModuleNotFoundError(\"No module named '{name}'\", name={name!r})\n"
        )
    out = tmp_path / "bench.json"
    env = {**os.environ, "PYTHONPATH": str(shadow)}
    env.pop("LOOPGUARD_BENCH_REDIS_URL", None)
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--small", "--json", str(out)]
        + ["--only", "stores", "--only", "otel"],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    rows = {row["measure"]: row for row in json.loads(out.read_text("utf-8"))}
    assert rows["SqliteStore vs MemoryStore, per call — mixed, default rules (×)"]["ratio"] > 0
    assert rows["RedisStore"]["note"] == (
        "not available: No module named 'redis' (the test extra has it)"
    )
    assert rows["otel plugin — OpenTelemetry not imported, mixed (× without)"]["ratio"] > 0
    assert rows["otel plugin"]["note"] == "not available: No module named 'opentelemetry'"
    assert not any(measure.endswith("(group)") for measure in rows)  # no group failed
    assert "not available: No module named 'redis'" in done.stdout


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


def test_shares_prints_every_detectors_share_on_every_trace() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "shares.py"), "--small"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    ids = loopguard.Guard.default().session("ids").config["detectors"]
    share_lines = done.stdout.split("share of each detector", 1)[1].splitlines()[1:]
    rows = {tuple(line.split()[:2]) for line in share_lines}
    names = ("distinct", "repeat", "ping_pong", "big_args", "mixed")
    assert rows == {(name, i) for name in names for i in ids}
    for line in share_lines:
        float(line.split()[2])  # a signed figure
