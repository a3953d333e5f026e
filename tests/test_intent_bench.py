"""benchmarks/intent_bench.py stays importable and returns rows the benchmark runner reads."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest

from loopguard.policy.turns import TurnPolicy

pytestmark = pytest.mark.slow  # the intent benchmark itself, on small inputs

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "intent_bench.py"


def test_small_run_returns_runner_rows_for_every_size() -> None:
    spec = importlib.util.spec_from_file_location("intent_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.run(small=True)
    assert [r.get("keywords") for r in rows[:3]] == [30, 1_000, 10_000]
    for row in rows:
        assert {"measure", "ratio", "budget", "ok", "note"} <= set(row)
    assert [r["budget"] for r in rows[3:]] == [2, 20]
    # every intent of builtin:portfolio is evaluated (the default rules have none)
    assert len(TurnPolicy.from_config(module._config(30, random.Random(1))).intents) == 4
