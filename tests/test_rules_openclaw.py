"""The OpenClaw block (JSON5 as pasted from the seed) means exactly the native keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopguard.config.json5 import load_json5, snake_case
from loopguard.config.layers import load
from loopguard.config.source import effective_config
from loopguard.errors import RulesError

# Both blocks pasted verbatim from the Portuguese seed (comments and trailing commas included).
SEED_BLOCKS = """\
{
  tools: {
    loopDetection: {
      enabled: false, // master switch for the rolling-history detectors
      historySize: 30,
      warningThreshold: 10,
      criticalThreshold: 20,
      unknownToolThreshold: 10,
      globalCircuitBreakerThreshold: 30,
      detectors: {
        genericRepeat: true,
        knownPollNoProgress: true,
        pingPong: true,
      },
      postCompactionGuard: {
        windowSize: 3, // armed after compaction-retry; runs unless enabled is explicitly false
      },
    },
  },
}

{
  agents: {
    list: [
      {
        id: "safe-runner",
        tools: {
          loopDetection: {
            enabled: true,
            warningThreshold: 8,
            criticalThreshold: 16,
          },
        },
      },
    ],
  },
}
"""

NATIVE_EQUIVALENT = {
    "version": 1,
    "loop_detection": {
        "enabled": False,
        "history_size": 30,
        "warning_threshold": 10,
        "critical_threshold": 20,
        "unknown_tool_threshold": 10,
        "global_circuit_breaker_threshold": 30,
        "post_compaction_guard": {"window_size": 3},
    },
    "detectors": {
        "generic_repeat": {"enabled": True},
        "known_poll_no_progress": {"enabled": True},
        "ping_pong": {"enabled": True},
    },
    "agents": {
        "safe-runner": {
            "loop_detection": {"enabled": True, "warning_threshold": 8, "critical_threshold": 16}
        }
    },
}


@pytest.mark.parametrize("name", ["seed.json5", "seed.txt", "seed.yaml"])
def test_seed_blocks_mean_the_native_keys(tmp_path: Path, name: str) -> None:
    path = tmp_path / name  # .json5 by extension, the others detected by content
    path.write_text(SEED_BLOCKS, encoding="utf-8")
    document = load(path)
    assert document.data == load(NATIVE_EQUIVALENT, "mapping").data
    assert document.findings == []


def test_the_agent_block_overrides_the_global_one() -> None:
    data = load(SEED_BLOCKS, "text", "seed.json5").data
    config, repairs = effective_config(data, "safe-runner")
    loop = config["loop_detection"]
    assert (loop["enabled"], loop["warning_threshold"], loop["critical_threshold"]) == (True, 8, 16)
    assert loop["global_circuit_breaker_threshold"] == 30
    assert repairs == []
    assert effective_config(data)[0]["loop_detection"]["enabled"] is False


def test_post_compaction_block_of_the_seed_alone() -> None:
    text = """{
  tools: {
    loopDetection: {
      // master switch; set false to disable the guard along with the rolling detectors
      enabled: true,
      postCompactionGuard: {
        windowSize: 3, // default
      },
    },
  },
}"""
    loop = load(text, "text", "guard.json5").data["loop_detection"]
    assert loop["enabled"] is True and loop["post_compaction_guard"] == {"window_size": 3}


def test_the_same_block_in_yaml_is_accepted() -> None:
    text = "tools:\n  loopDetection:\n    warningThreshold: 4\n    criticalThreshold: 7\n"
    loop = load(text, "text", "oc.yaml").data["loop_detection"]
    assert (loop["warning_threshold"], loop["critical_threshold"]) == (4, 7)
    assert "enabled" not in loop  # the tri-state stays unset


def test_unknown_camel_case_key_is_an_error_with_position_and_suggestion() -> None:
    text = "{\n  tools: {\n    loopDetection: {\n      histroySize: 30,\n    },\n  },\n}\n"
    with pytest.raises(RulesError) as info:
        load(text, "text", "typo.json5")
    [finding] = info.value.findings
    assert (finding.file, finding.line, finding.col) == ("typo.json5", 4, 7)
    assert "did you mean 'historySize'" in finding.message
    assert finding.path == "tools.loopDetection.histroySize"


def test_wrong_type_is_reported_where_the_user_wrote_it() -> None:
    text = "{tools: {loopDetection: {\n  warningThreshold: 'ten'}}}"
    with pytest.raises(RulesError) as info:
        load(text, "text", "t.json5")
    [finding] = info.value.findings
    assert (finding.line, finding.col) == (2, 21)
    assert finding.path == "tools.loopDetection.warningThreshold"
    assert "whole number" in finding.message


def test_other_openclaw_settings_are_ignored_with_a_warning() -> None:
    text = (
        "{tools: {exec: {host: 'x'}, loopDetection: {enabled: true}},\n"
        " agents: {defaults: {}, list: [{id: 'a', model: 'm', tools: {}}]}}"
    )
    document = load(text, "text", "full.json5")
    assert document.data["loop_detection"]["enabled"] is True
    assert document.data["agents"] == {"a": {}}
    ignored = sorted(f.path for f in document.findings)
    assert ignored == ["agents.defaults", "agents.list.a.model", "tools.exec"]
    assert all(f.level == "warning" for f in document.findings)


def test_agent_without_id_and_duplicate_agents_are_errors() -> None:
    for text in ("{agents: {list: [{tools: {}}]}}", "{agents: {list: [{id: 'a'}, {id: 'a'}]}}"):
        with pytest.raises(RulesError):
            load(text, "text", "agents.json5")


def test_json5_syntax_errors_have_positions() -> None:
    text = "{\n  tools: {\n    loopDetection: {\n      enabled: true\n      historySize: 3,\n"
    with pytest.raises(RulesError) as info:
        load(text, "text", "broken.json5")
    [finding] = info.value.findings
    assert (finding.line, finding.col) == (5, 7)
    assert finding.code == "json5-syntax"


def test_json5_reader_covers_the_subset() -> None:
    doc = load_json5(
        "/* c */ {a: 'x\\'y', \"b\": [1, -2.5, 0x10, +3, .5, Infinity,], c: null,"
        ' $d_1: true, e: "\\u00e9\\n",}',
        "t",
    )
    [value] = doc.data
    assert value == {
        "a": "x'y",
        "b": [1, -2.5, 16, 3, 0.5, float("inf")],
        "c": None,
        "$d_1": True,
        "e": "\u00e9\n",
    }
    assert doc.findings == []


def test_json5_duplicate_keys_and_deep_nesting_are_errors() -> None:
    assert [f.code for f in load_json5("{a: 1, a: 2}", "t").findings] == ["duplicate-key"]
    deep = load_json5("[" * 50000 + "]" * 50000, "t")
    assert [f.code for f in deep.findings] == ["json5-syntax"]
    assert "nesting deeper" in deep.findings[0].message


def test_native_rules_may_be_written_in_json5() -> None:
    document = load("{version: 1, turn: {max_tool_rounds: 9,},}", "text", "r.json5")
    assert document.data["turn"]["max_tool_rounds"] == 9


def test_snake_case() -> None:
    assert snake_case("knownPollNoProgress") == "known_poll_no_progress"
    assert snake_case("pingPong") == "ping_pong"
