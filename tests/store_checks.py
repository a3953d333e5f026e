"""Runs store workers and checks their writes against one in-memory process.

Every write a worker makes replaces a version token by a new one, so the tokens chain the
writes of a session in the order the store applied them. `replay` follows that chain from
the first write, replays each method on a plain in-memory guard and returns where the
decisions or the final history differ.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import loopguard

WORKER = str(Path(__file__).with_name("store_worker.py"))
RULES = {
    "version": 1,
    "loop_detection": {
        "enabled": True,
        "warning_threshold": 3,
        "critical_threshold": 5,
        "global_circuit_breaker_threshold": 8,
        "unknown_tool_threshold": 3,
    },
    "detectors": {"doom_loop_fuzzy": {"min_chars": 20, "similarity": 0.8}},
    "aggregator": {"escalate_criticals": 3},
}


def spawn(
    tmp: Path,
    name: str,
    store: dict[str, Any],
    sessions: list[str],
    calls: int,
    seed: int,
    go: Path | None = None,
    start: int = 0,
) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp / f"{name}.jsonl"
    spec = tmp / f"{name}.json"
    spec.write_text(
        json.dumps(
            {
                "store": store,
                "rules": RULES,
                "sessions": sessions,
                "calls": calls,
                "seed": seed,
                "log": str(log),
                "go": str(go) if go else None,
                "start": start,
            }
        )
    )
    return subprocess.Popen([sys.executable, WORKER, str(spec)]), log


def read_logs(logs: list[Path]) -> list[dict[str, Any]]:
    rows = []
    for log in logs:
        if log.exists():
            rows += [
                json.loads(line) for line in log.read_text().splitlines() if line.endswith("}")
            ]
    return rows


def chains(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per session, the writes in the store's order (asserting none lost, none twice)."""
    by_old: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
    for row in rows:
        assert row["old"] not in by_old[row["sid"]], f"two writes replaced one version: {row}"
        by_old[row["sid"]][row["old"]] = row
    out = {}
    for sid, writes in by_old.items():
        chain, token = [], 0
        while token in writes:
            chain.append(writes[token])
            token = chain[-1]["new"]
        assert len(chain) == len(writes), f"{sid}: {len(writes) - len(chain)} writes off the chain"
        out[sid] = chain
    return out


def replay(chain: list[dict[str, Any]], guard: loopguard.Guard, sid: str) -> list[str]:
    """Replay one session's writes in memory; the differences found (empty: identical)."""
    session = guard.session(sid)
    problems = []
    for i, row in enumerate(chain):
        if row["op"] == "turn":
            session.begin_turn([{"role": "user", "content": "go on"}])
            continue
        if row["op"] == "before":
            got = session.before_call(row["tool"], row["args"], call_id=row["cid"])
        else:
            extra = {k: row[k] for k in ("result", "error") if k in row}
            got = session.after_call(row["tool"], row["args"], call_id=row["cid"], **extra)
        if got.to_dict() != row["decision"]:
            problems.append(
                f"{sid} write {i} ({row['op']} {row['tool']}): "
                f"{row['decision']['action']} stored, {got.action} replayed"
            )
    return problems
