"""The remembered ping-pong tail gives exactly what a fresh walk of the history gives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_fakes import BUILTINS

import loopguard

VETO = "veto"


def reference(
    history: list[dict[str, Any]], digest: str, run_id: str | None, warning: int, critical: int
) -> tuple[str, int, tuple[int, ...]] | None:
    """The ping-pong rule, read straight off a history snapshot."""
    scoped = [e for e in reversed(history) if e["run_id"] == run_id]
    if len(scoped) < 2 or scoped[1]["args_digest"] == scoped[0]["args_digest"]:
        return None
    newest, other = scoped[0]["args_digest"], scoped[1]["args_digest"]
    if digest != other:
        return None
    tail = [scoped[0], scoped[1]]
    for entry in scoped[2:]:
        if entry["args_digest"] != tail[-2]["args_digest"]:
            break
        tail.append(entry)
    count = len(tail) + 1
    stalled = True
    for side in (newest, other):
        ref = None
        for entry in tail:
            if entry["args_digest"] != side:
                continue
            if entry["outcome"] is None:
                stalled = False
            elif entry["outcome"] != VETO:
                ref = ref or entry["outcome"]
                stalled = stalled and entry["outcome"] == ref
    evidence = tuple(sorted(e["seq"] for e in tail[:64]))
    if count >= critical and stalled:
        return ("critical", count, evidence)
    if count >= warning:
        return ("warn", count, evidence)
    return None


step = st.tuples(
    st.sampled_from(["alt"] * 12 + ["a", "b", "c"]),  # mostly alternate a and b
    st.sampled_from(["same"] * 12 + ["new", "pending"]),  # its result
    st.sampled_from([None] * 12 + ["r2"]),  # run id
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(steps=st.lists(step, min_size=1, max_size=60), history_size=st.sampled_from([5, 8, 30]))
def test_memo_matches_a_fresh_walk(
    steps: list[tuple[str, str, str | None]], history_size: int
) -> None:
    warning, critical = 3, 6
    off = {name: {"enabled": False} for name in BUILTINS if name != "ping_pong"}
    guard = loopguard.Guard.from_dict(
        {
            "version": 1,
            "detectors": off,
            "aggregator": {"escalate_criticals": 0},
            "loop_detection": {
                "enabled": True,
                "history_size": history_size,
                "warning_threshold": warning,
                "critical_threshold": critical,
                "global_circuit_breaker_threshold": critical + 1,
            },
        }
    )
    session = guard.session("s")
    tools = {"a": ("read", {"p": 1}), "b": ("list", {"d": "."}), "c": ("read", {"p": 2})}
    digests: dict[str, str] = {}
    for i, (which, result, run_id) in enumerate(steps):
        if which == "alt":
            which = "a" if i % 2 == 0 else "b"
        tool, args = tools[which]
        before = [e.to_dict() for e in session.history()]
        decision = session.before_call(tool, args, call_id=f"c{i}", run_id=run_id)
        digests.setdefault(which, session.history()[-1].to_dict()["args_digest"])
        votes = [
            (v.level, v.count, v.evidence) for v in decision.votes if v.detector == "ping_pong"
        ]
        expected = reference(before, digests[which], run_id, warning, critical)
        assert votes == ([expected] if expected else []), (i, steps[: i + 1])
        if result != "pending":
            outcome = f"{which}-{i}" if result == "new" else f"{which}-same"
            session.after_call(tool, args, result=outcome, call_id=f"c{i}", run_id=run_id)
