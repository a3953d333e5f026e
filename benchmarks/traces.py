"""Standard benchmark traces: deterministic JSONL of `{tool, args, result}` per call.

`python benchmarks/traces.py OUT_DIR` writes them; `load(name)` builds one in
memory. Every trace comes from a fixed seed, so two runs measure the same work.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

Call = dict[str, Any]
NAMES = ("distinct", "repeat", "ping_pong", "big_args", "mixed")


def distinct(n: int = 10_000) -> Iterator[Call]:
    """Reads of different files with different results: the common, healthy case."""
    rng = random.Random(1)
    for i in range(n):
        path = f"src/pkg{i % 97}/module_{i}.py"
        yield {
            "tool": "read_file",
            "args": {"path": path, "limit": 200},
            "result": {
                "content": f"# module {i}\nx = {rng.randrange(10**9)}\n",
                "lines": 2,
                "ts": 1_700_000_000 + i,
            },
        }


def repeat(n: int = 10_000) -> Iterator[Call]:
    """The same call with the same result, again and again."""
    for _ in range(n):
        yield {
            "tool": "run_tests",
            "args": {"path": "tests/", "verbose": True},
            "result": {"passed": 10, "failed": 1, "output": "FAILED test_x"},
        }


def ping_pong(n: int = 10_000) -> Iterator[Call]:
    """Two calls alternating, each with a stable result."""
    for i in range(n):
        if i % 2 == 0:
            yield {
                "tool": "read_file",
                "args": {"path": "config.yaml"},
                "result": {"content": "debug: false\n"},
            }
        else:
            yield {
                "tool": "list_dir",
                "args": {"path": "."},
                "result": {"entries": ["config.yaml", "src", "tests"]},
            }


def big_args(n: int = 2_000, size: int = 10_000) -> Iterator[Call]:
    """Writes of ~10 KB, each a small edit of the last: the fuzzy detector's worst case."""
    rng = random.Random(4)
    alphabet = "abcdefghijklmnopqrstuvwxyz     \n"
    text = list("".join(rng.choice(alphabet) for _ in range(size)))
    for i in range(n):
        for _ in range(3):
            text[rng.randrange(size)] = rng.choice(alphabet)
        yield {
            "tool": "write_file",
            "args": {"path": "notes.md", "content": "".join(text)},
            "result": {"ok": True, "bytes": size, "ts": i},
        }


def mixed(n: int = 10_000) -> Iterator[Call]:
    """Mostly distinct reads and test runs, some polling, some background checks."""
    rng = random.Random(5)
    for i in range(n):
        roll = rng.random()
        if roll < 0.55:
            yield {
                "tool": "read_file",
                "args": {"path": f"src/m{rng.randrange(5000)}.py"},
                "result": {"content": f"line {rng.randrange(10**6)}"},
            }
        elif roll < 0.75:
            yield {
                "tool": "run_tests",
                "args": {"k": f"test_{rng.randrange(300)}"},
                "result": {"passed": rng.randrange(50), "failed": rng.randrange(3)},
            }
        elif roll < 0.9:
            yield {
                "tool": "process",
                "args": {"action": "poll", "id": "build"},
                "result": {"state": "running", "progress": i // 40, "pid": 4242},
            }
        else:
            yield {
                "tool": "check_background_tasks",
                "args": {},
                "result": {"running": 1, "durationMs": rng.randrange(1000)},
            }


def load(name: str, scale: float = 1.0) -> list[Call]:
    """A trace as a list; `scale` shrinks it (for smoke tests)."""
    maker = {
        "distinct": distinct,
        "repeat": repeat,
        "ping_pong": ping_pong,
        "big_args": big_args,
        "mixed": mixed,
    }[name]
    default = 2_000 if name == "big_args" else 10_000
    return list(maker(max(10, int(default * scale))))


def write_all(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        with (out / f"{name}.jsonl").open("w", encoding="utf-8") as fh:
            for call in load(name):
                fh.write(json.dumps(call, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    write_all(Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/out"))
