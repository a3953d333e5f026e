"""benchmarks/quality.py: scoring of the first stop, and a smoke run on bundled transcripts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "quality.py"
BUNDLED = ROOT / "benchmarks" / "corpus"
PROTOCOL = json.dumps({"protocol": "test"})


def event_log(session: str, calls: list[tuple[str, str]]) -> str:
    """An event log: one user message, then one round per (command, output)."""
    rows = [{"event": "user_message", "session_id": session, "text": "go"}]
    for i, (command, output) in enumerate(calls):
        rows.append(
            {
                "event": "assistant_message",
                "session_id": session,
                "text": "",
                "tool_calls": [{"id": f"c{i}", "name": "bash", "arguments": {"command": command}}],
            }
        )
        rows.append(
            {"event": "tool_result", "session_id": session, "call_id": f"c{i}", "content": output}
        )
    return "\n".join(json.dumps(r) for r in rows) + "\n"


def run(corpus: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(corpus), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def write_corpus(tmp_path: Path, labels: list[dict[str, Any]], files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    lines = [PROTOCOL] + [json.dumps(label) for label in labels]
    (tmp_path / "labels.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


@pytest.mark.slow
def test_first_stops_are_scored_caught_early_late_missed_and_false(tmp_path: Path) -> None:
    # Six distinct reads, then `make` failing the same way: the default rules block call 8.
    calls = [(f"cat f{i}", f"body {i}") for i in range(6)] + [
        ("make", "make: command not found")
    ] * 3
    healthy = [(f"cat g{i}", f"text {i}") for i in range(5)]
    files = {
        "loop.eventlog.jsonl": event_log("loop", calls),
        "healthy.eventlog.jsonl": event_log("healthy", healthy),
        "stopped.eventlog.jsonl": event_log("stopped", [("ls", "a b")] * 3),
    }
    labels = [
        {
            "file": "loop.eventlog.jsonl",
            "label": "loop",
            "loop_type": "exact_repeat",
            "source": "own",
            "loop_first_index": 6,
            "intervene_index": 8,
        },  # stop at 8: caught
        {
            "file": "loop.eventlog.jsonl",
            "label": "loop",
            "loop_type": "exact_repeat",
            "source": "own",
            "loop_first_index": 9,
            "intervene_index": 9,
        },  # stop at 8 < 9: early
        {
            "file": "loop.eventlog.jsonl",
            "label": "loop",
            "loop_type": "other",
            "source": "own",
            "loop_first_index": 0,
            "intervene_index": 4,
        },  # stop at 8 > 4 + 3: late
        {
            "file": "healthy.eventlog.jsonl",
            "label": "loop",
            "loop_type": "other",
            "source": "own",
            "loop_first_index": 0,
            "intervene_index": 2,
        },  # never stopped: missed
        {"file": "healthy.eventlog.jsonl", "label": "healthy", "source": "own"},
        {"file": "stopped.eventlog.jsonl", "label": "healthy", "source": "own"},  # a false stop
    ]
    corpus = write_corpus(tmp_path, labels, files)
    out = tmp_path / "report.json"
    done = run(corpus, "--json", str(out), "--list")
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    verdicts = [(t["verdict"], t["stop_index"]) for t in data["transcripts"]]
    assert verdicts == [
        ("caught", 8),
        ("early", 8),
        ("late", 8),
        ("missed", None),
        ("clean", None),
        ("false_stop", 2),
    ]
    overall = data["all"]
    assert overall["loops_caught"] == {"n": 1, "of": 4, "pct": 25.0}
    assert overall["healthy_stopped"] == {"n": 1, "of": 2, "pct": 50.0}
    assert overall["precision"] == {
        "n": 1,
        "of": 4,
        "pct": 25.0,
    }  # 4 labelled transcripts were stopped
    assert overall["median_delay"] == 2.0  # caught at +0, late at +4
    assert data["by_detector"]["doom_loop_exact"] == {"caught": 1, "false_stops": 1}
    assert "| loops caught | 25.0 % (1/4) |" in done.stdout
    assert "false_stop stopped.eventlog.jsonl stop=2 by doom_loop_exact (healthy)" in done.stdout


@pytest.mark.slow
def test_smoke_on_a_few_bundled_transcripts(tmp_path: Path) -> None:
    labels = [json.loads(line) for line in (BUNDLED / "labels.jsonl").read_text().splitlines()[1:]]
    picked = [lb for lb in labels if lb["file"].startswith("swe_agent/")][:3]
    picked += [lb for lb in labels if lb["label"] == "loop"][:1]
    lines = [PROTOCOL] + [json.dumps(lb) for lb in picked]
    (tmp_path / "labels.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for label in picked:
        target = tmp_path / label["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.write_bytes((BUNDLED / label["file"]).read_bytes())
    done = run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "transcripts: 4 (1 loops, 3 healthy)" in done.stdout
    assert "| loops caught | 100.0 % (1/1) |" in done.stdout
    assert "| healthy runs stopped | 0.0 % (0/3) |" in done.stdout


@pytest.mark.slow
def test_a_folder_without_labels_is_a_clear_error(tmp_path: Path) -> None:
    done = run(tmp_path)
    assert (
        done.returncode == 2 and "no labels.jsonl" in done.stderr and "Traceback" not in done.stderr
    )


def test_the_bundled_copy_stays_small_and_attributed() -> None:
    size = sum(p.stat().st_size for p in BUNDLED.rglob("*") if p.is_file())
    assert size <= 10 * 1024 * 1024
    attribution = (BUNDLED / "ATTRIBUTION.md").read_text(encoding="utf-8")
    for folder in {p.relative_to(BUNDLED).parts[0] for p in BUNDLED.rglob("*") if p.is_file()} - {
        "labels.jsonl",
        "ATTRIBUTION.md",
    }:
        assert f"## {folder}/" in attribution
