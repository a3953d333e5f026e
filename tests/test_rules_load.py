"""Loading rules files: the public API, extends, and every kind of bad input."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from loopguard.config.layers import MAX_BYTES, builtin_names, load
from loopguard.config.source import RulesDocument
from loopguard.errors import RulesError


def error_of(call: object, *args: object) -> RulesError:
    with pytest.raises(RulesError) as info:
        call(*args)  # type: ignore[operator]
    assert all(f.level == "error" for f in info.value.findings)
    return info.value


def only(call: object, *args: object) -> tuple[str, int, int, str, str]:
    [f] = error_of(call, *args).findings
    return f.file, f.line, f.col, f.code, f.message


# -- the API -------------------------------------------------------------------
def test_default_is_the_implicit_base_and_the_document_is_frozen() -> None:
    document = load("version: 1\nturn: {max_tool_rounds: 7}\n", "text", "mine.yaml")
    assert isinstance(document, RulesDocument)
    assert document.source == "mine.yaml"
    assert document.data["turn"]["max_tool_rounds"] == 7
    assert document.data["turn"]["context_messages"] == 4  # from builtin:default
    assert document.data["loop_detection"]["warning_threshold"] == 10
    assert "extends" not in document.data
    with pytest.raises(dataclasses.FrozenInstanceError):
        document.source = "x"  # type: ignore[misc]


def test_enabled_stays_absent_unless_written() -> None:
    assert "enabled" not in load({"version": 1}, "mapping").data["loop_detection"]
    data = load({"version": 1, "loop_detection": {"enabled": False}}, "mapping").data
    assert data["loop_detection"]["enabled"] is False


def test_mappings_merge_key_by_key_lists_replace() -> None:
    data = load(
        "version: 1\ndetectors:\n  doom_loop_exact: {exempt: [a]}\n"
        "keyword_sets: {extra: [x]}\nintents: []\n",
        "text",
    ).data
    exact = data["detectors"]["doom_loop_exact"]
    base = load({"version": 1}, "mapping").data["detectors"]["doom_loop_exact"]
    assert exact == dict(base, exempt=["a"]) and len(base) > 1
    assert "plan_marker" in data["keyword_sets"] and data["keyword_sets"]["extra"] == ["x"]
    assert data["intents"] == []


def test_mapping_input_is_not_mutated() -> None:
    mapping = {"version": 1, "turn": {"max_tool_rounds": 3}}
    data = load(mapping, "mapping").data
    data["turn"]["max_tool_rounds"] = 99
    assert mapping == {"version": 1, "turn": {"max_tool_rounds": 3}}


def test_agents_are_kept_as_written() -> None:
    data = load(
        {"version": 1, "agents": {"a": {"loop_detection": {"warning_threshold": 50}}}}, "mapping"
    ).data
    assert data["agents"] == {"a": {"loop_detection": {"warning_threshold": 50}}}


def test_bundled_packs_are_listed_and_load() -> None:
    assert {"builtin:default", "builtin:portfolio", "builtin:portfolio-en"} <= set(builtin_names())
    data = load("version: 1\nextends: [builtin:portfolio-en]\n", "text").data
    ids = [intent["id"] for intent in data["intents"]]
    assert ids[:2] == ["portfolio_view", "portfolio_view_en"]
    assert (
        "portfolio_diagnose_en" in data["keyword_sets"] or "affirmative_en" in data["keyword_sets"]
    )


def test_the_portfolio_pack_extends_the_default_and_portfolio_en_extends_it() -> None:
    portfolio = load("builtin:portfolio")
    assert [layer.name for layer in portfolio.layers] == [
        "options schema",  # the detectors' option defaults
        "builtin:default",
        "builtin:portfolio",
    ]
    assert [i["id"] for i in portfolio.data["intents"]] == [
        "portfolio_view",
        "portfolio_diagnose",
        "portfolio_followup",
        "portfolio_affirmative",
    ]
    english = load("builtin:portfolio-en")
    assert [layer.name for layer in english.layers] == [
        "options schema",
        "builtin:default",
        "builtin:portfolio",
        "builtin:portfolio-en",
    ]
    assert set(portfolio.data["keyword_sets"]) < set(english.data["keyword_sets"])
    chinese = [i for i in english.data["intents"] if not i["id"].endswith("_en")]
    assert chinese == portfolio.data["intents"]  # restated as the pack writes them


def test_an_unknown_bundled_pack_is_a_rules_error_naming_the_packs() -> None:
    finding = error_of(load, "builtin:portfolio-fr").findings[0]
    assert "unknown bundled pack" in finding.message and "builtin:portfolio" in finding.hint


def test_extends_applies_layers_in_order_relative_to_the_including_file(tmp_path: Path) -> None:
    (tmp_path / "packs").mkdir()
    (tmp_path / "packs" / "one.yaml").write_text(
        "version: 1\nturn: {max_tool_rounds: 5, context_messages: 2}\n", encoding="utf-8"
    )
    (tmp_path / "packs" / "two.yaml").write_text(
        "version: 1\nextends: [one.yaml]\nturn: {max_tool_rounds: 6}\n", encoding="utf-8"
    )
    main = tmp_path / "rules.yaml"
    main.write_text(
        "version: 1\nextends: [packs/two.yaml, packs/one.yaml]\naggregator: {warn_every: 3}\n",
        encoding="utf-8",
    )
    data = load(main).data
    # one, then two (one again is skipped: each layer applies once), then the file
    assert data["turn"]["max_tool_rounds"] == 6
    assert data["turn"]["context_messages"] == 2
    assert data["aggregator"]["warn_every"] == 3


def test_extends_cycle_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("version: 1\nextends: [b.yaml]\n", encoding="utf-8")
    (tmp_path / "b.yaml").write_text("version: 1\nextends: [a.yaml]\n", encoding="utf-8")
    file, line, col, code, message = only(load, tmp_path / "a.yaml")
    assert (line, col, code) == (2, 11, "extends-cycle")
    assert file.endswith("b.yaml") and "a.yaml -> " in message


def test_errors_in_an_extended_file_name_that_file(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text("version: 1\nturn: {max_tool_round: 5}\n", encoding="utf-8")
    (tmp_path / "top.yaml").write_text("version: 1\nextends: [base.yaml]\n", encoding="utf-8")
    file, line, col, code, _ = only(load, tmp_path / "top.yaml")
    assert file.endswith("base.yaml") and (line, col, code) == (2, 8, "unknown-key")


def test_extends_unknown_pack_and_missing_file() -> None:
    assert only(load, "version: 1\nextends: [builtin:nope]\n", "text")[3] == "extends"
    assert "file not found" in only(load, "version: 1\nextends: [nope.yaml]\n", "text")[4]


def test_undefined_keyword_set_fails_loading() -> None:
    text = (
        "version: 1\nintents:\n  - id: a\n    when: {text_contains: nope}\n    require: {tool: t}\n"
    )
    file, line, col, code, _ = only(load, text, "text", "r.yaml")
    assert (file, line, col, code) == ("r.yaml", 4, 27, "undefined-set")


def test_unknown_detector_in_order_fails_loading() -> None:
    assert (
        only(load, "version: 1\naggregator: {order: [ping_pongg]}\n", "text")[3]
        == "unknown-detector"
    )


# -- bad input: each a clear error with a position, never a traceback -------------------
def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "e.yaml").write_bytes(b"")
    assert only(load, tmp_path / "e.yaml")[1:4] == (1, 1, "empty")


def test_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "l1.yaml").write_bytes("version: 1\nreason: caf\xe9\n".encode("latin-1"))
    _, line, col, code, message = only(load, tmp_path / "l1.yaml")
    assert (line, col, code) == (2, 12, "encoding") and "0xe9" in message


def test_utf16_is_named() -> None:
    from loopguard.config.layers import analyze

    result = analyze("version: 1\n".encode("utf-16"), "bytes", "u16.yaml")
    assert [f.code for f in result.findings] == ["encoding"]
    assert "UTF-16" in result.findings[0].message


def test_binary_data(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    _, line, col, code, _ = only(load, tmp_path / "b.yaml")
    assert (line, col, code) == (3, 1, "binary")


def test_yaml_syntax_error() -> None:
    _, line, col, code, message = only(load, "version: 1\nturn: [1, 2\n", "text")
    assert code == "yaml-syntax" and line >= 2 and col >= 1 and "YAML syntax error" in message


@pytest.mark.parametrize(
    "text, shown", [("- 1\n- 2\n", "a list"), ("42\n", "a number"), ("just text\n", "a string")]
)
def test_document_is_a_list_or_scalar(text: str, shown: str) -> None:
    _, line, col, code, message = only(load, text, "text")
    assert (line, col, code) == (1, 1, "not-a-mapping") and message.endswith(shown)
    assert text.strip() not in message  # the type only: the file may hold a secret


def test_missing_version() -> None:
    assert only(load, "turn: {max_tool_rounds: 3}\n", "text")[1:] == (
        1,
        1,
        "version",
        "missing `version`",
    )


def test_future_version_is_checked_before_anything_else() -> None:
    _, line, col, code, message = only(load, "version: 2\nnew_block: {x: 1}\n", "text")
    assert (line, col, code) == (1, 10, "version") and "newer" in message


def test_unknown_key_at_any_depth_with_did_you_mean() -> None:
    text = "version: 1\nturn:\n  recall:\n    drop_tags: x\n"
    _, line, col, code, message = only(load, text, "text")
    assert (line, col, code) == (4, 5, "unknown-key")
    assert message == "unknown key 'drop_tags' (did you mean 'drop_tag'?)"
    unrelated = only(load, "version: 1\nzzz: 1\n", "text")[4]
    assert unrelated == "unknown key 'zzz'"


def test_unknown_key_inside_agent_block() -> None:
    text = "version: 1\nagents:\n  a:\n    loop_detection: {warning_threshhold: 3}\n"
    error = error_of(load, text, "text")
    assert error.findings[0].path == "agents.a.loop_detection.warning_threshhold"


def test_wrong_type() -> None:
    _, line, col, code, message = only(load, "version: 1\nturn: {max_tool_rounds: [1]}\n", "text")
    assert (line, col, code) == (2, 25, "type") and "expected a whole number, got a list" in message


@pytest.mark.parametrize(
    "value, code",
    [("-5", "range"), ("0", "range"), ("2.5", "type"), ("10.0", "type"), ("true", "type")],
)
def test_negative_zero_fractional_or_boolean_threshold(value: str, code: str) -> None:
    text = f"version: 1\nloop_detection:\n  warning_threshold: {value}\n"
    _, line, col, got, _ = only(load, text, "text")
    assert (line, col, got) == (3, 22, code)


def test_alias_bomb_file(tmp_path: Path) -> None:
    lines = ["version: 1", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    (tmp_path / "bomb.yaml").write_text("\n".join(lines), encoding="utf-8")
    assert only(load, tmp_path / "bomb.yaml")[3] == "alias-bomb"


def test_nesting_thousands_of_levels_deep(tmp_path: Path) -> None:
    (tmp_path / "deep.yaml").write_text(
        "version: 1\nx: " + "[" * 5000 + "]" * 5000, encoding="utf-8"
    )
    assert only(load, tmp_path / "deep.yaml")[3] == "too-deep"


def test_ten_megabyte_file_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"version: 1\n" + b"# padding\n" * (1024 * 1024))
    assert big.stat().st_size > 10 * 1024 * 1024 > MAX_BYTES
    _, line, col, code, message = only(load, big)
    assert (line, col, code) == (1, 1, "too-large") and "1 MiB" in message


def test_file_that_does_not_exist(tmp_path: Path) -> None:
    file, line, col, code, message = only(load, tmp_path / "missing.yaml")
    assert file.endswith("missing.yaml") and (line, col, code) == (1, 1, "unreadable")
    assert message == "file not found"


def test_a_directory_is_not_a_rules_file(tmp_path: Path) -> None:
    assert only(load, tmp_path)[3] == "unreadable"


def test_mapping_errors_have_paths_but_no_position() -> None:
    file, line, col, code, _ = only(load, {"version": 1, "turn": {"bogus": 1}}, "mapping")
    assert (file, line, col, code) == ("<mapping>", 0, 0, "unknown-key")
    assert only(load, ["not", "a", "mapping"], "mapping")[3] == "not-a-mapping"


def test_mapping_tuples_become_lists_and_odd_values_are_errors() -> None:
    data = load({"version": 1, "keyword_sets": {"a": ("x", "y")}}, "mapping").data
    assert data["keyword_sets"]["a"] == ["x", "y"]
    assert only(load, {"version": 1, "turn": {1: 2}}, "mapping")[3] == "key-type"
    message = only(
        load,
        {
            "version": 1,
            "intents": [{"id": "a", "when": {"text_contains": object()}, "require": {"tool": "t"}}],
        },
        "mapping",
    )[4]
    assert message == "expected a keyword set name or a list of names, got a Python object"
