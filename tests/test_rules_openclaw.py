"""The OpenClaw block (JSON5 as pasted from the seed) means exactly the native keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopguard.config.json5 import load_json5, parse_text, snake_case
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


_VALUE_HINT = (
    "strings need quotes; values are objects, arrays, strings, numbers, true, false or null"
)
_COMMA_HINT = "separate items with commas and close every bracket"
_PAIR_HINT = "escape a character outside the BMP as a pair, e.g. \\ud83d\\ude00"


@pytest.mark.parametrize(
    "text, line, col, message, hint",
    [
        ("{a: 1 /* open", 1, 7, "unterminated /* comment", "close it with */"),
        ("{a: 1, b}", 1, 9, "expected ':' after key 'b'", ""),
        ("{a 1}", 1, 4, "expected ':' after key 'a'", ""),
        ("{1: 2}", 1, 2, "expected a key, found '1'", "keys are names or quoted strings"),
        ("{a: 1] ", 1, 6, "expected ',' or '}', found ']'", _COMMA_HINT),
        ("[1, 2", 1, 6, "expected ',' or ']', found end of text", _COMMA_HINT),
        ("{a: @}", 1, 5, "unexpected character '@': expected a value", _VALUE_HINT),
        ("{a: ", 1, 5, "unexpected end of text: a value is missing", ""),
        ("{a: 12abc}", 1, 5, "unexpected character '1': expected a value", _VALUE_HINT),
        ("{a: '", 1, 5, "unterminated string", "close it with '"),
        ("{a: 'x\ny'}", 1, 7, "line break inside a string", "use \\n or close the string"),
        ("{a: 'x\\", 1, 8, "unterminated string", ""),
        ("{a: '\\x4'}", 1, 6, "bad escape \\x4'", ""),
        ("{a: '\\u12G4'}", 1, 6, "bad escape \\u12G4", ""),
        ("{a: '\\ud83d'}", 1, 6, "lone surrogate \\ud83d (half of a character)", _PAIR_HINT),
        ("{a: 'x\\ude00'}", 1, 7, "lone surrogate \\ude00 (half of a character)", _PAIR_HINT),
        (
            "{a: " + "1" * 65 + "}",
            1,
            5,
            "number too long (65 characters; at most 64)",
            "rules numbers are thresholds and sizes",
        ),
        ("\r\n{a: 1,\r\n b: [1 2]}", 3, 8, "expected ',' or ']', found '2'", _COMMA_HINT),
        ("{a: 1}\u2028{b: ~}", 2, 5, "unexpected character '~': expected a value", _VALUE_HINT),
        ("[" * 101, 1, 101, "nesting deeper than 100 levels", "a rules file is never this deep"),
    ],
)
def test_json5_syntax_error_messages_and_positions(
    text: str, line: int, col: int, message: str, hint: str
) -> None:
    [finding] = load_json5(text, "t.json5").findings
    assert (finding.line, finding.col, finding.code) == (line, col, "json5-syntax")
    assert (finding.message, finding.hint) == (f"JSON5 syntax error: {message}", hint)


def test_json5_value_and_key_positions() -> None:
    doc = load_json5("// c\n{a: [1, {'b': null}], \"c\": 'd'}\r\n[2]", "t")
    assert doc.positions == {
        (0,): (2, 1),
        (0, "a"): (2, 5),
        (0, "a", 0): (2, 6),
        (0, "a", 1): (2, 9),
        (0, "a", 1, "b"): (2, 15),
        (0, "c"): (2, 28),
        (1,): (3, 1),
        (1, 0): (3, 2),
    }
    assert doc.key_positions == {(0, "a"): (2, 2), (0, "a", 1, "b"): (2, 10), (0, "c"): (2, 23)}
    [finding] = load_json5("{a: 1,\n a: 2}", "t").findings
    assert (finding.line, finding.col, finding.code) == (2, 2, "duplicate-key")
    assert finding.message == "duplicate key 'a' (first defined at line 1)"
    assert finding.hint == "only the last value is kept; remove one of them"


def test_openclaw_translation_findings_are_pinned() -> None:
    text = (
        "{tools: {loopDetection: {warningThreshold: 3, detectors: {pingPong: false}}},\n"
        " agents: {list: [{id: 'a', tools: {loopDetection: 4}}, {tools: {}}, {id: 'a', x: 1}]}}\n"
        "{tools: {loopDetection: {postCompactionGuard: {windowSise: 2}}, web: {}}}"
    )
    doc = parse_text(text, "oc.json5")
    ignored = "only tools.loopDetection and agents.list[].tools.loopDetection are read"
    assert [(f.line, f.col, f.level, f.code, f.path, f.message, f.hint) for f in doc.findings] == [
        (2, 51, "error", "type", "agents.list.a.tools.loopDetection", "expected a mapping", ""),
        (
            2,
            56,
            "error",
            "openclaw-agent",
            "agents.list[1]",
            "an agent in agents.list needs an `id` string",
            'add id: "name"',
        ),
        (
            2,
            74,
            "error",
            "duplicate-agent",
            "agents.list.a",
            "agent 'a' is listed twice",
            "merge the two entries",
        ),
        (
            2,
            79,
            "warning",
            "openclaw-ignored",
            "agents.list.a.x",
            "agents.list.a.x is ignored: not a loop-detection setting",
            ignored,
        ),
        (
            3,
            48,
            "error",
            "unknown-key",
            "tools.loopDetection.postCompactionGuard.windowSise",
            "unknown key 'windowSise' (did you mean 'windowSize'?)",
            "allowed keys: windowSize",
        ),
        (
            3,
            65,
            "warning",
            "openclaw-ignored",
            "tools.web",
            "tools.web is ignored: not a loop-detection setting",
            ignored,
        ),
    ]
    assert doc.data == {
        "version": 1,
        "loop_detection": {"warning_threshold": 3},
        "detectors": {"ping_pong": {"enabled": False}},
        "agents": {"a": {}},
    }


def test_a_broken_plugin_setup_leaves_the_translation_and_lint_working(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When the detector registry cannot be built, `registry_or_none` says so with None and
    what reads it goes on: the OpenClaw block maps detector names by the snake_case rule and
    lint still reports what the file itself gets wrong."""
    import loopguard.detection.plugins as plugins
    from loopguard.lint.linter import lint_bytes

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("no registry")

    monkeypatch.setattr(plugins, "load_registry", broken)
    assert plugins.registry_or_none() is None
    text = "{tools: {loopDetection: {enabled: true, detectors: {genericRepeat: false}}}}"
    detectors = load(text, "text", "oc.json5").data["detectors"]
    assert detectors["generic_repeat"] == {"enabled": False}
    report = lint_bytes(b"version: 1\nturn: {max_tool_rounds: 3, max_tool_rounds: 4}\n")
    assert [f.code for f in report.findings if f.level == "error"] == ["duplicate-key"]
