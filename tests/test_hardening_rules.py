"""Hostile rules input (issue #10): every case is a positioned RulesError, never a traceback
or a hang."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

import loopguard
from loopguard.config.layers import analyze, load
from loopguard.errors import RulesError


def rules_error(call: Any, *args: Any, **kwargs: Any) -> RulesError:
    with pytest.raises(RulesError) as info:
        call(*args, **kwargs)
    assert info.value.findings and all(f.line >= 0 and f.col >= 0 for f in info.value.findings)
    str(info.value).encode("utf-8")  # printable as UTF-8 (no lone surrogate in a message)
    return info.value


def codes(error: RulesError) -> set[str]:
    return {f.code for f in error.findings}


# -- truncated text ------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "{",
        "{version: 1,",
        "{version: 1, detectors: {",
        "{version: 1, x: [",
        "{version:",
        "{'version",
        "[",
        "{version: 1, a: 'b",
    ],
)
@pytest.mark.parametrize("name", ["rules.json5", "rules.yaml"])
def test_truncated_text_is_a_positioned_error(text: str, name: str) -> None:
    error = rules_error(load, text, "text", name)
    assert error.findings[0].line == 1 and error.findings[0].col >= 1
    rules_error(loopguard.Guard.from_yaml, text, name)
    result = analyze(text.encode(), "bytes", name)
    assert result.errors and result.data is None


# -- numbers -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "version: 1\nloop_detection: {warning_threshold: " + "9" * 5000 + "}\n",
        "{version: 1, loop_detection: {warning_threshold: " + "9" * 5000 + "}}",
        "version: 1\nloop_detection: {warning_threshold: 1" + "0" * 70 + ".5}\n",
    ],
)
def test_huge_number_literals_are_refused(text: str) -> None:
    error = rules_error(load, text, "text", "r.json5" if text.startswith("{") else "r.yaml")
    assert "too long" in str(error) and error.findings[0].line in (1, 2)


@pytest.mark.parametrize(
    "value", [2**63, -(2**63) - 1, 10**5000], ids=["2^63", "-2^63-1", "10^5000"]
)
def test_out_of_range_integers_are_refused(value: int) -> None:
    error = rules_error(
        load, {"version": 1, "loop_detection": {"warning_threshold": value}}, "mapping"
    )
    assert codes(error) == {"too-large"}
    if value.bit_length() < 100:
        text = f"version: 1\nloop_detection: {{history_size: {value}}}\n"
        assert codes(rules_error(load, text, "text")) == {"too-large"}


def test_integers_in_range_still_load() -> None:
    data = load("version: 1\nloop_detection: {history_size: 9223372036854775807}\n", "text").data
    assert data["loop_detection"]["history_size"] == 2**63 - 1


@pytest.mark.parametrize(
    "text", ["version: 1.0\n", "version: true\n", "{version: 1.0}", "version: 1e0\n"]
)
def test_version_must_be_the_integer_one(text: str) -> None:
    error = rules_error(load, text, "text", "v.json5" if text.startswith("{") else "v.yaml")
    assert codes(error) == {"version"}


# -- surrogates ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, name",
    [
        ('version: 1\nkeyword_sets: {a: ["\\ud83d"]}\n', "r.yaml"),
        ("{version: 1, keyword_sets: {a: ['\\ud83d']}}", "r.json5"),
        ("{version: 1, keyword_sets: {a: ['\\ude00x']}}", "r.json5"),
        ('version: 1\nkeyword_sets: {"\\ud83d": [a]}\n', "r.yaml"),
        (
            "version: 1\nkeyword_sets: {a: [x\ud83d]}\n",
            "r.yaml",
        ),  # the character itself, not an escape
    ],
)
def test_lone_surrogates_are_refused(text: str, name: str) -> None:
    error = rules_error(load, text, "text", name)
    assert "surrogate" in str(error) and error.findings[0].line in (1, 2)
    rules_error(loopguard.Guard.from_yaml, text, name)


def test_json5_surrogate_pair_escape_is_one_character() -> None:
    data = load("{version: 1, keyword_sets: {a: ['\\ud83d\\ude00']}}", "text", "r.json5").data
    assert data["keyword_sets"]["a"] == ["\U0001f600"]


@pytest.mark.parametrize(
    "mapping",
    [
        {"version": 1, "keyword_sets": {"a": ["x\ud83d"]}},
        {"version": 1, "keyword_sets": {"a\udc00": ["x"]}},
    ],
)
def test_surrogates_in_a_mapping_are_refused(mapping: dict[str, Any]) -> None:
    assert codes(rules_error(loopguard.Guard.from_dict, mapping)) == {"encoding"}


# -- mappings ------------------------------------------------------------------------
def test_cyclic_mapping_is_a_rules_error() -> None:
    mapping: dict[str, Any] = {"version": 1, "keyword_sets": {}}
    mapping["keyword_sets"]["self"] = mapping
    assert codes(rules_error(loopguard.Guard.from_dict, mapping)) == {"cycle"}
    looped: list[Any] = []
    looped.append(looped)
    assert codes(rules_error(loopguard.Guard.from_dict, {"version": 1, "intents": looped})) == {
        "cycle"
    }


def test_deep_mapping_is_a_rules_error() -> None:
    deep: dict[str, Any] = {"version": 1}
    node = deep
    for _ in range(1000):
        node["a"] = {}
        node = node["a"]
    assert codes(rules_error(loopguard.Guard.from_dict, deep)) == {"too-deep"}


def test_a_mapping_with_exponentially_shared_subtrees_is_refused_quickly() -> None:
    node: Any = ["lol"] * 10
    for _ in range(9):  # what yaml.safe_load gives for a "billion laughs" document
        node = [node] * 10
    error = rules_error(loopguard.Guard.from_dict, {"version": 1, "keyword_sets": {"a": node}})
    assert codes(error) == {"too-large"}


def test_shared_subtrees_are_not_cycles() -> None:
    words = ["alpha", "beta"]
    data = load({"version": 1, "keyword_sets": {"a": words, "b": words}}, "mapping").data
    assert data["keyword_sets"]["a"] == data["keyword_sets"]["b"] == words


def test_unprintable_key_is_named_safely() -> None:
    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no")

        def __hash__(self) -> int:
            return 1

    error = rules_error(load, {"version": 1, Hostile(): 1, 10**5000: 2}, "mapping")
    assert codes(error) == {"key-type"}


# -- file types ----------------------------------------------------------------------
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")


@needs_fifo
def test_fifo_as_rules_file_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "rules.yaml"
    os.mkfifo(fifo)
    error = rules_error(load, fifo)
    assert "not a regular file" in str(error)
    rules_error(loopguard.Guard.from_file, fifo)


@needs_fifo
def test_fifo_as_extends_target_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "base.yaml")
    (tmp_path / "rules.yaml").write_text("version: 1\nextends: [base.yaml]\n")
    error = rules_error(load, tmp_path / "rules.yaml")
    assert "not a regular file" in str(error) and error.findings[0].line == 2


def test_device_file_is_refused() -> None:
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    assert "not a regular file" in str(rules_error(load, "/dev/zero"))


# -- extends confinement -------------------------------------------------------------
SECRET = "OPENAI_API_KEY=sk-proj-SECRET0123456789"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """tmp/outside/{.env, shared.yaml}, tmp/project/{rules.yaml, sub/base.yaml}."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / ".env").write_text(SECRET + "\n")
    (outside / "shared.yaml").write_text("version: 1\nturn: {max_tool_rounds: 5}\n")
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "sub" / "base.yaml").write_text("version: 1\nturn: {max_tool_rounds: 6}\n")
    return project


def _write(project: Path, extends: str) -> Path:
    path = project / "rules.yaml"
    path.write_text(f"version: 1\nextends: [{extends}]\n")
    return path


def test_extends_inside_the_tree_loads(tree: Path) -> None:
    assert load(_write(tree, "sub/base.yaml")).data["turn"]["max_tool_rounds"] == 6


@pytest.mark.parametrize("entry", ["../outside/shared.yaml", "ABS"])
def test_extends_outside_the_tree_is_refused_unless_allowed(tree: Path, entry: str) -> None:
    entry = str(tree.parent / "outside" / "shared.yaml") if entry == "ABS" else entry
    path = _write(tree, f"'{entry}'")
    error = rules_error(load, path)
    assert "outside" in str(error) and (error.findings[0].line, codes(error)) == (2, {"extends"})
    rules_error(loopguard.Guard.from_file, path)
    guard = loopguard.Guard.from_file(path, allow_extends_outside=True)
    assert guard.document["turn"]["max_tool_rounds"] == 5


def test_extends_through_a_symlink_out_of_the_tree_is_refused(tree: Path) -> None:
    link = tree / "sub" / "link.yaml"
    try:
        link.symlink_to(tree.parent / "outside" / "shared.yaml")
    except OSError:
        pytest.skip("symbolic links not available")
    assert "outside" in str(rules_error(load, _write(tree, "sub/link.yaml")))


def test_extends_in_text_and_mappings_is_confined_to_the_working_directory(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree)
    assert (
        load("version: 1\nextends: [sub/base.yaml]\n", "text").data["turn"]["max_tool_rounds"] == 6
    )
    rules_error(loopguard.Guard.from_yaml, "version: 1\nextends: [../outside/shared.yaml]\n")
    rules_error(loopguard.Guard.from_dict, {"version": 1, "extends": ["../outside/shared.yaml"]})
    guard = loopguard.Guard.from_dict(
        {"version": 1, "extends": ["../outside/shared.yaml"]}, allow_extends_outside=True
    )
    assert guard.document["turn"]["max_tool_rounds"] == 5


@pytest.mark.parametrize(
    "content",
    [
        SECRET + "\n",
        "sk-proj-SECRET0123456789\n",
        "{" + SECRET,
        "KEY: sk-proj-SECRET0123456789\n",
        "- sk-proj-SECRET0123456789\n",
        "\x00" + SECRET,
        SECRET + "\n\xff",
    ],
)
def test_a_file_that_is_not_rules_is_never_echoed(tree: Path, content: str) -> None:
    (tree / "sub" / ".env").write_bytes(
        content.encode("utf-8", "surrogateescape")
        if "\xff" not in content
        else content[:-1].encode() + b"\xff"
    )
    error = rules_error(load, _write(tree, "sub/.env"))
    shown = "".join(f.format_text() + f.message + f.hint + f.path for f in error.findings)
    assert "SECRET" not in shown and "sk-proj" not in shown and "OPENAI" not in shown
    assert error.findings[0].line == 2 and "not a rules file" in error.findings[0].message


def test_the_top_file_is_not_echoed_either(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(SECRET + "\n")
    assert "SECRET" not in str(rules_error(load, path))


@pytest.mark.parametrize("entry", ['"a\\0b.yaml"', '"\\0"'])
def test_nul_in_an_extends_entry_is_a_clear_error(tree: Path, entry: str) -> None:
    error = rules_error(load, _write(tree, entry))
    assert "NUL" in str(error) and error.findings[0].line == 2


def test_builtin_packs_are_always_allowed(tree: Path) -> None:
    assert load(_write(tree, "builtin:portfolio")).data["intents"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_unreadable_extends_target_names_the_problem_not_the_content(tree: Path) -> None:
    target = tree / "sub" / "base.yaml"
    target.chmod(0)
    try:
        if os.access(target, os.R_OK):
            pytest.skip("running as a user who reads everything")
        assert "cannot extend" in str(rules_error(load, _write(tree, "sub/base.yaml")))
    finally:
        target.chmod(0o644)


# -- the CLI flag --------------------------------------------------------------------
@pytest.mark.parametrize("command", [["lint"], ["config", "--rules"], ["detectors", "--rules"]])
def test_cli_refuses_extends_outside_unless_flagged(
    tree: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from loopguard.cli import main

    path = str(_write(tree, "../outside/shared.yaml"))
    assert main([*command, path]) in (1, 2)
    captured = capsys.readouterr()
    assert "outside" in captured.out + captured.err and "Traceback" not in captured.err
    assert main([*command, path, "--allow-extends-outside"]) == 0


def test_cli_never_echoes_an_extended_secret(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from loopguard.cli import main

    (tree / "sub" / ".env").write_text(SECRET + "\n")
    assert main(["lint", "--format", "github", str(_write(tree, "sub/.env"))]) == 1
    captured = capsys.readouterr()
    assert "SECRET" not in captured.out + captured.err and "not a rules file" in captured.out


@pytest.mark.parametrize(
    "raw",
    [
        b"version: 1\nloop_detection: {warning_threshold: " + b"9" * 5000 + b"}\n",
        b'version: 1\nkeyword_sets: {a: ["\\ud83d"]}\n',
        b"{version: 1,",
        b"{",
        b"version: 1\nmessages: {en: {blocked: '{message:>2000000000}'}}\n",
    ],
)
def test_lint_reports_hostile_text_as_positioned_errors(raw: bytes) -> None:
    from loopguard.lint.linter import lint_bytes

    report = lint_bytes(raw, "rules.yaml")
    assert report.errors and all(f.line >= 1 for f in report.findings)
    "".join(f.format_text() for f in report.findings).encode("utf-8")


@pytest.mark.parametrize(
    "url", ["redis://:histhost46379/0", "redis://host:port/0", "redis://h:99999999/0"]
)
def test_a_store_url_with_a_bad_port_is_a_rules_error(url: str) -> None:
    # Found by the atheris rules target: Guard(...) raised ValueError from the URL parser.
    error = rules_error(loopguard.Guard.from_yaml, f"version: 1\nstore: {{url: '{url}'}}\n")
    assert codes(error) == {"store"}
