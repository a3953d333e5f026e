"""The remembered unknown-tool streak gives exactly what the newest-first walk of
unknown_tool_repeat's docstring gives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_fakes import BUILTINS

import loopguard


def reference(
    history: list[dict[str, Any]], tool: str, run_id: str | None, threshold: int
) -> int | None:
    """Walk back from the newest scoped entry while entries continue the streak."""
    count, name = 0, None
    for entry in reversed(history):
        if entry["run_id"] != run_id:
            continue
        if entry["tool"] != tool:
            break
        if entry["outcome"] == "veto":
            count += 1
        elif entry["unknown_tool"] is None or (name is not None and entry["unknown_tool"] != name):
            break
        else:
            name = entry["unknown_tool"]
            count += 1
    return count if name is not None and count >= threshold else None


step = st.tuples(
    st.sampled_from(["ghost"] * 30 + ["read"]),  # the tool called
    st.sampled_from(["missing_x"] * 30 + ["missing_y", "ok", "other_error", "pending"]),
    st.sampled_from([None] * 30 + ["r2"]),
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    steps=st.lists(step, min_size=1, max_size=50),
    history_size=st.sampled_from([4, 7, 30]),
    escalate=st.sampled_from([0, 2]),
)
def test_memo_matches_a_fresh_walk(
    steps: list[tuple[str, str, str | None]], history_size: int, escalate: int
) -> None:
    threshold = 3
    off = {name: {"enabled": False} for name in BUILTINS if name != "unknown_tool_repeat"}
    guard = loopguard.Guard.from_dict(
        {
            "version": 1,
            "detectors": off,
            "aggregator": {"escalate_criticals": escalate},
            "loop_detection": {
                "enabled": True,
                "history_size": history_size,
                "unknown_tool_threshold": threshold,
            },
        }
    )
    session = guard.session("s")
    for i, (tool, result, run_id) in enumerate(steps):
        before = [e.to_dict() for e in session.history()]
        decision = session.before_call(tool, {"i": i}, call_id=f"c{i}", run_id=run_id)
        counts = [v.count for v in decision.votes if v.detector == "unknown_tool_repeat"]
        expected = reference(before, tool, run_id, threshold)
        assert counts == ([expected] if expected else []), (i, steps[: i + 1])
        if result == "pending":
            continue
        if result.startswith("missing"):
            error = f"Unknown tool: {result[-1]}"
        else:
            error = "disk full" if result == "other_error" else None
        session.after_call(
            tool, {"i": i}, result="fine", error=error, call_id=f"c{i}", run_id=run_id
        )


def test_vetoes_still_held_count_when_another_missing_tool_follows() -> None:
    # While a call is pending the remembered streak is trimmed to the history but not
    # folded on; its veto count once outlived the trimmed vetoes, so the failure naming
    # another tool kept one veto of the three still held (a negative slice).
    off = {
        name: {"enabled": False}
        for name in (
            "generic_repeat",
            "known_poll_no_progress",
            "ping_pong",
            "global_circuit_breaker",
            "doom_loop_exact",
            "doom_loop_fuzzy",
            "post_compaction_guard",
            "cycle",
        )
    }
    guard = loopguard.Guard.from_dict(
        {
            "version": 1,
            "detectors": off,
            "aggregator": {"escalate_criticals": 0},
            "loop_detection": {"enabled": True, "history_size": 5, "unknown_tool_threshold": 3},
        }
    )
    session = guard.session("s")
    actions: list[str] = []
    for i in range(1, 9):  # 1-3 fail naming x; 4-8 blocked while 3 is in the history
        decision = session.before_call("ghost", {"i": i}, call_id=f"c{i}")
        actions.append(decision.action)
        if not decision.blocked:
            session.after_call("ghost", {"i": i}, error="Unknown tool: x", call_id=f"c{i}")
    for i in (9, 10):  # 3 has left the history: allowed, answered only later
        actions.append(session.before_call("ghost", {"i": i}, call_id=f"c{i}").action)
    assert actions == ["allow"] * 3 + ["critical"] * 5 + ["allow"] * 2
    for i in (9, 10):
        session.after_call("ghost", {"i": i}, error="Unknown tool: y", call_id=f"c{i}")
    decision = session.before_call("ghost", {"i": 11}, call_id="c11")  # 10, 9 (y), 8, 7, 6
    assert decision.action == "critical"
    assert [(v.detector, v.count, v.evidence) for v in decision.votes] == [
        ("unknown_tool_repeat", 5, (6, 7, 8, 9, 10))
    ]
