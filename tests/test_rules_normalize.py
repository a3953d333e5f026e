"""Per-agent merging and threshold repair, as docs/rules.md describes them."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from loopguard.config.layers import load
from loopguard.config.source import Repair, deep_merge, effective_config

BASE: dict[str, Any] = {
    "version": 1,
    "loop_detection": {
        "history_size": 30,
        "warning_threshold": 10,
        "critical_threshold": 20,
        "global_circuit_breaker_threshold": 30,
        "post_compaction_guard": {"window_size": 3},
    },
    "detectors": {"ping_pong": {"enabled": True}, "doom_loop_exact": {"window": 6, "threshold": 3}},
    "agents": {
        "fast": {
            "loop_detection": {
                "enabled": True,
                "warning_threshold": 25,
                "post_compaction_guard": {"window_size": 5},
            },
            "detectors": {"doom_loop_exact": {"threshold": 4}},
        },
    },
}


def loop(config: dict[str, Any]) -> tuple[int, int, int]:
    block = config["loop_detection"]
    return (
        block["warning_threshold"],
        block["critical_threshold"],
        block["global_circuit_breaker_threshold"],
    )


def test_agent_block_overrides_field_by_field_and_nested_blocks_merge() -> None:
    config, _ = effective_config(BASE, "fast")
    assert "agents" not in config
    assert config["loop_detection"]["enabled"] is True
    assert config["loop_detection"]["history_size"] == 30
    assert config["loop_detection"]["post_compaction_guard"] == {"window_size": 5}
    assert config["detectors"]["doom_loop_exact"] == {"window": 6, "threshold": 4}
    assert config["detectors"]["ping_pong"] == {"enabled": True}


def test_repair_raises_critical_then_breaker_and_reports_it() -> None:
    config, repairs = effective_config(BASE, "fast")
    assert loop(config) == (25, 26, 30)
    assert repairs == [Repair("loop_detection.critical_threshold", 20, 26)]
    data = copy.deepcopy(BASE)
    data["agents"]["fast"]["loop_detection"]["warning_threshold"] = 40
    config, repairs = effective_config(data, "fast")
    assert loop(config) == (40, 41, 42)
    assert repairs == [
        Repair("loop_detection.critical_threshold", 20, 41),
        Repair("loop_detection.global_circuit_breaker_threshold", 30, 42),
    ]


def test_breaker_alone_is_repaired_above_critical() -> None:
    data = deep_merge(BASE, {"loop_detection": {"global_circuit_breaker_threshold": 20}})
    config, repairs = effective_config(data)
    assert loop(config) == (10, 20, 21)
    assert repairs == [Repair("loop_detection.global_circuit_breaker_threshold", 20, 21)]


def test_unknown_agent_or_none_gets_the_global_blocks() -> None:
    assert effective_config(BASE, "nobody") == effective_config(BASE, None)
    config, repairs = effective_config(BASE)
    assert loop(config) == (10, 20, 30) and repairs == []
    assert "enabled" not in config["loop_detection"]


def test_input_is_never_mutated_and_result_shares_no_containers() -> None:
    before = copy.deepcopy(BASE)
    config, _ = effective_config(BASE, "fast")
    assert BASE == before
    config["loop_detection"]["warning_threshold"] = 1
    config["detectors"]["ping_pong"]["enabled"] = False
    assert BASE == before


def test_works_on_the_default_rules() -> None:
    data = load(
        {"version": 1, "agents": {"x": {"loop_detection": {"critical_threshold": 5}}}}, "mapping"
    ).data
    config, repairs = effective_config(data, "x")
    assert loop(config) == (10, 11, 30)
    assert [r.field for r in repairs] == ["loop_detection.critical_threshold"]


def test_deep_merge_replaces_lists_and_scalars() -> None:
    merged = deep_merge({"a": {"b": [1, 2], "c": 1}, "d": {"e": 1}}, {"a": {"b": [3]}, "d": 5})
    assert merged == {"a": {"b": [3], "c": 1}, "d": 5}


thresholds = st.integers(min_value=1, max_value=200)


@given(
    w=thresholds, c=thresholds, b=thresholds, aw=st.none() | thresholds, ac=st.none() | thresholds
)
def test_repair_always_orders_and_never_lowers(
    w: int, c: int, b: int, aw: int | None, ac: int | None
) -> None:
    override = {
        k: v for k, v in (("warning_threshold", aw), ("critical_threshold", ac)) if v is not None
    }
    data = {
        "loop_detection": {
            "warning_threshold": w,
            "critical_threshold": c,
            "global_circuit_breaker_threshold": b,
        },
        "agents": {"a": {"loop_detection": override}},
    }
    snapshot = copy.deepcopy(data)
    config, repairs = effective_config(data, "a")
    warning, critical, breaker = loop(config)
    merged_w = override.get("warning_threshold", w)
    merged_c = override.get("critical_threshold", c)
    assert warning == merged_w
    assert warning < critical < breaker
    assert critical == (merged_c if merged_c > merged_w else merged_w + 1)
    assert breaker == (b if b > critical else critical + 1)
    assert all(r.new > r.old for r in repairs)
    assert data == snapshot
