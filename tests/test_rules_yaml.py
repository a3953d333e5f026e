"""The YAML reader: positions, duplicate keys, YAML 1.2 scalars, alias bombs, depth."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from loopguard.config.source import MAX_ALIAS_NODES, MAX_DEPTH, load_yaml


def codes(text: str) -> list[str]:
    return [f.code for f in load_yaml(text, "t.yaml").findings]


def test_values_keep_their_line_and_column() -> None:
    doc = load_yaml("version: 1\nloop_detection:\n  history_size: 30\nlist: [a, {id: b}]\n", "t")
    assert doc.data == {
        "version": 1,
        "loop_detection": {"history_size": 30},
        "list": ["a", {"id": "b"}],
    }
    assert doc.positions[("loop_detection", "history_size")] == (3, 17)
    assert doc.key_positions[("loop_detection", "history_size")] == (3, 3)
    assert doc.positions[("list", 1, "id")] == (4, 16)
    assert doc.findings == []


def test_duplicate_keys_are_errors_naming_both_lines() -> None:
    doc = load_yaml("a: 1\nb:\n  c: 1\n  c: 2\n", "t")
    [finding] = doc.findings
    assert (finding.line, finding.col, finding.level, finding.code) == (
        4,
        3,
        "error",
        "duplicate-key",
    )
    assert "first defined at line 3" in finding.message
    assert finding.path == "b.c"


def test_yes_no_on_off_stay_strings_and_numbers_follow_yaml_1_2() -> None:
    doc = load_yaml("a: [yes, no, on, off, true, False, 017, 0x1f, 1.5, 2024-01-01, 1:30, ~]", "t")
    assert doc.data["a"] == [
        "yes",
        "no",
        "on",
        "off",
        True,
        False,
        17,
        31,
        1.5,
        "2024-01-01",
        "1:30",
        None,
    ]


def test_merge_keys_are_supported_and_explicit_keys_win() -> None:
    doc = load_yaml("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n", "t")
    assert doc.data["other"] == {"x": 1, "y": 3}
    assert doc.findings == []


def test_billion_laughs_is_refused_quickly_without_memory_growth() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    tracemalloc.start()
    doc = load_yaml("\n".join(lines), "bomb.yaml")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert [f.code for f in doc.findings] == ["alias-bomb"]
    assert str(MAX_ALIAS_NODES) in doc.findings[0].message
    assert peak < 50 * 1024 * 1024


def test_small_aliases_are_copied() -> None:
    doc = load_yaml("a: &x [1, 2]\nb: *x\n", "t")
    assert doc.data == {"a": [1, 2], "b": [1, 2]}
    assert doc.data["a"] is not doc.data["b"]


def test_recursive_and_undefined_aliases_are_errors() -> None:
    assert codes("a: &x [1, *x]") == ["yaml-alias"]
    assert codes("a: *nothing") == ["yaml-alias"]


def test_thousands_of_nesting_levels_are_refused_without_recursion_error() -> None:
    flow = "a: " + "[" * 20000 + "]" * 20000
    block = "a:\n" + "".join(" " * i + "- \n" for i in range(1, 3000))
    for text in (flow, block):
        doc = load_yaml(text, "deep.yaml")
        assert [f.code for f in doc.findings] == ["too-deep"]
        assert str(MAX_DEPTH) in doc.findings[0].message


def test_syntax_errors_have_positions() -> None:
    [finding] = load_yaml("a: 1\n b: 2\nc: [\n", "t").findings
    assert finding.code == "yaml-syntax"
    assert finding.line >= 2


def test_control_characters_are_reported_with_their_position() -> None:
    [finding] = load_yaml("a: 1\nb: \x07\n", "t").findings
    assert (finding.line, finding.col) == (2, 4)
    assert "U+0007" in finding.message


def test_unsafe_tags_and_non_string_keys_are_refused() -> None:
    assert codes("a: !!python/object:os.system x") == ["yaml-tag"]
    assert codes("a: !!binary aGVsbG8=") == ["yaml-tag"]
    assert codes("1: x") == ["key-type"]
    assert codes("[a]: x\n") == ["key-type"]


def test_a_tag_on_a_value_it_does_not_fit_is_a_positioned_error_not_a_crash() -> None:
    for text in ("a: !!bool maybe", "a: !!int abc", "a: !!float x1", "a: !!null no"):
        doc = load_yaml(text, "t.yaml")
        assert [(f.code, f.line, f.col) for f in doc.findings] == [("yaml-tag", 1, 4)], text
        assert "is not a value of its tag !!" in doc.findings[0].message
    doc = load_yaml("a: !!int 12\nb: !!float 1.5\nc: !!bool true\nd: !!null ~\ne: !!str 3", "t")
    assert doc.data == {"a": 12, "b": 1.5, "c": True, "d": None, "e": "3"}
    assert doc.findings == []


def test_more_than_one_document_is_an_error() -> None:
    assert codes("a: 1\n---\nb: 2\n") == ["multiple-documents"]


def test_findings_before_a_syntax_error_are_kept_and_a_fatal_one_stops_reading() -> None:
    assert codes("a: 1\na: 2\nb: [1\n") == ["duplicate-key", "yaml-syntax"]
    assert codes("a: &x [1, *x]\nb: [1\n") == ["yaml-alias"]
    doc = load_yaml("a: &x [1]\nb: *x\n", "t")
    assert doc.positions[("b",)] == (2, 4)  # where the alias is written


def test_empty_text_has_no_data() -> None:
    assert load_yaml("", "t").data is None
    assert load_yaml("# only a comment\n", "t").data is None


def test_libyaml_and_pure_python_readers_agree() -> None:
    from importlib import resources

    import yaml

    from loopguard.config import source

    if source.FAST_LOADER is None:
        return  # nothing to compare on an installation without libyaml
    text = resources.files("loopguard.rules").joinpath("default.yaml").read_text("utf-8")
    text += "extra: {a: &x [1, 持仓], b: *x, c: {<<: {m: 1}, n: 2}, d: 1, d: 2}\n"
    fast = source._YamlReader(text, "t").run(source.FAST_LOADER)
    slow = source._YamlReader(text, "t").run(yaml.SafeLoader)
    assert fast == slow
    assert [f.code for f in fast.findings] == ["duplicate-key"]


@pytest.mark.slow
def test_an_escape_beyond_the_last_code_point_is_a_positioned_syntax_error(tmp_path: Path) -> None:
    """PyYAML's scanner raises OverflowError / ValueError for `\\UFFFFFFFF`-like escapes (found
    by the rules property test); lint reports it at its line and column and exits 1."""
    for text, where in (('a: "\\UFFFFFFFF"\n', (1, 7)), ('a:\n  - "x \\U7fffffff"\n', (2, 10))):
        doc = load_yaml(text, "rules.yaml")
        assert [(f.line, f.col, f.code) for f in doc.findings] == [(*where, "yaml-syntax")]
        assert "beyond U+10FFFF" in doc.findings[0].message
    path = tmp_path / "rules.yaml"
    path.write_text('version: 1\nmessages:\n  en:\n    warn: "\\U7fffffff"\n', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "loopguard", "lint", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"{path}:4:" in done.stdout and "beyond U+10FFFF" in done.stdout
