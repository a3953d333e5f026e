"""The lint check registry: codes, documentation, selection, directories and plugin checks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from plugin_fakes import fake_site

import loopguard.lint.checks
from loopguard.cli import main
from loopguard.cli.lint_cmd import SelectionError, select
from loopguard.config.layers import BLOCKING, load
from loopguard.errors import RulesError
from loopguard.lint.checks import STAGES, LintCheck, discover
from loopguard.lint.linter import _build, checks, lint_bytes

CASES = Path(__file__).parent / "lint_cases"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_every_check_module_declares_code_level_and_examples() -> None:
    modules = discover()
    folder = Path(loopguard.lint.checks.__file__).parent
    assert {m.__name__.rsplit(".", 1)[1] for m in modules} == {
        p.stem for p in folder.glob("*.py")
    } - {"__init__", "context"}
    for module in modules:
        assert module.CODE == module.__name__.rsplit(".", 1)[1].replace("_", "-")
        assert module.LEVEL in ("error", "warning")
        assert "Fails:" in (module.__doc__ or "")
        entry = checks()[module.CODE]
        assert entry.doc == module.__doc__ and entry.origin == "loopguard"
        if getattr(module, "BLOCKS_LOAD", False):
            assert module.BLOCKS_LOAD is True and entry.stage == module.STAGE
            assert entry.check is None and not entry.can_disable
        else:
            assert "Passes:" in (module.__doc__ or "") and entry.check is module.check


def test_the_checks_that_block_loading_are_those_the_loader_runs() -> None:
    assert set(BLOCKING) == {m for m in discover() if getattr(m, "BLOCKS_LOAD", False)}


def test_checks_are_listed_by_stage_then_table_then_module_name() -> None:
    listed = list(checks().values())
    assert [c.stage for c in listed] == sorted((c.stage for c in listed), key=STAGES.index)
    meaning = [c.code for c in listed if c.check is not None]
    assert meaning == sorted(meaning) and listed[0].code == "unreadable"
    assert [c.code for c in listed if c.stage == "meaning"][0] == "check-failed"


THROWAWAY = '''"""A keyword set whose name shouts.

Passes: `keyword_sets: {buy: [buy]}`.
Fails: `keyword_sets: {BUY: [buy]}`.
"""

from loopguard.lint.checks.context import keyword_sets

CODE = "shouting-set"
LEVEL = "warning"


def check(ctx):
    return [
        ctx.finding(path, LEVEL, f"{name!r} shouts", "write it in lower case", CODE, at_key=True)
        for path, name, _ in keyword_sets(ctx.top)
        if name != name.lower()
    ]
'''


def test_a_check_is_its_module_alone_found_listed_and_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "more_checks"
    folder.mkdir()
    (folder / "shouting_set.py").write_text(THROWAWAY, encoding="utf-8")
    package = loopguard.lint.checks
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(folder)])
    rules = tmp_path / "r.yaml"
    rules.write_text("version: 1\nkeyword_sets: {BUY: [buy]}\n", encoding="utf-8")
    _build.cache_clear()
    try:
        assert checks()["shouting-set"].summary == "A keyword set whose name shouts."
        listed = [line.split() for line in run(capsys, "lint", "--list-checks")[1].splitlines()]
        assert ["shouting-set", "warning", "on", "meaning", "A"] in [row[:5] for row in listed]
        code, out, _ = run(capsys, "lint", str(rules))
        assert code == 0 and "2:16: warning[shouting-set]: 'BUY' shouts" in out
        assert (
            "[shouting-set]" not in run(capsys, "lint", "--disable", "shouting-set", str(rules))[1]
        )
    finally:
        monkeypatch.undo()
        sys.modules.pop("loopguard.lint.checks.shouting_set", None)
        _build.cache_clear()
    assert "shouting-set" not in checks()


def test_loading_lists_a_scopes_errors_together_and_the_templates_last() -> None:
    rules = {
        "version": 1,
        "messages": {"en": {"blocked": "{nope}"}},
        "aggregator": {"order": ["nope"]},
        "intents": [{"id": "g", "when": {"text_contains": "gone"}, "require": {"tool": "t"}}],
        "agents": {
            "a": {
                "intents": [{"id": "i", "when": {"text_contains": "x"}, "require": {"tool": "t"}}],
                "aggregator": {"order": ["nix"]},
            }
        },
    }
    with pytest.raises(RulesError) as caught:
        load(rules, "mapping")
    assert [(f.code, f.path) for f in caught.value.findings] == [
        ("undefined-set", "intents.g.when.text_contains"),
        ("unknown-detector", "aggregator.order[0]"),
        ("undefined-set", "agents.a.intents.i.when.text_contains"),
        ("unknown-detector", "agents.a.aggregator.order[0]"),
        ("template", "messages.en.blocked"),
    ]


def test_every_code_lint_reports_on_the_cases_is_registered(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(CASES)
    paths = sorted(
        str(p.relative_to(CASES))
        for p in (CASES / "invalid").iterdir()
        if p.suffix in (".yaml", ".json5")
    )
    main(["lint", "--format", "json", "--enable", "redundant-value", "--agent", "x", *paths])
    import json

    found = {f["code"] for f in json.loads(capsys.readouterr().out)}
    assert len(found) >= 30
    assert found <= set(checks())


def test_selection_defaults_enable_and_disable() -> None:
    active = select()
    assert "unused-set" in active and "redundant-value" not in active
    assert "redundant-value" in select(enable=["redundant-value"])
    assert "unused-set" not in select(disable=["unused-set"])


@pytest.mark.parametrize(
    "disable, enable, words",
    [
        (["unused-sets"], [], "unknown lint check 'unused-sets'"),
        (["unknown-key"], [], "cannot be disabled"),
        (["unused-set"], ["unused-set"], "both --disable and --enable"),
    ],
)
def test_bad_selection_is_refused(disable: list[str], enable: list[str], words: str) -> None:
    with pytest.raises(SelectionError, match=words):
        select(disable, enable)


def test_cli_bad_selection_exits_2_without_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "lint", "--disable", "nope", "builtin:default")
    assert (code, out) == (2, "")
    assert "unknown lint check 'nope'" in err and "Traceback" not in err


def test_comma_separated_codes_are_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "lint",
        "--disable",
        "unused-set,duplicate-keyword",
        str(CASES / "invalid" / "disable.yaml"),
    )
    assert code == 0 and "[empty-set]" in out and "[unused-set]" not in out


def test_list_checks_names_every_code_with_level_and_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "lint", "--list-checks")
    assert code == 0
    rows = {
        line.split()[0]: line.split()[1:3]
        for line in out.splitlines()
        if line and not line.startswith(("on:", " "))
    }
    assert set(rows) == set(checks())
    assert rows["unknown-key"] == ["error", "always"]
    assert rows["unused-set"] == ["warning", "on"]
    assert rows["redundant-value"] == ["warning", "off"]


def test_list_checks_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    code, out, _ = run(capsys, "lint", "--list-checks", "--format", "json")
    rows = {row["code"]: row for row in json.loads(out)}
    assert code == 0 and set(rows) == set(checks())
    assert rows["never-fires"]["level"] == "error" and rows["never-fires"]["default"] == "on"
    assert "Fails:" in rows["never-fires"]["doc"] and rows["never-fires"]["origin"] == "loopguard"


def test_lint_without_paths_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "lint")
    assert code == 2 and "name at least one rules file" in err


def test_a_directory_is_linted_recursively_skipping_hidden_folders(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(CASES)
    code, out, err = run(capsys, "lint", "tree")
    assert out == (CASES / "tree.expected").read_text(encoding="utf-8")
    assert code == 1 and "4 files" in err
    assert ".cache" not in out and "notes.txt" not in out


def test_a_directory_without_rules_files_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "readme.txt").write_text("hi", encoding="utf-8")
    code, _, err = run(capsys, "lint", str(tmp_path))
    assert code == 2 and "no rules files" in err


def test_ignore_comments_apply_to_stdin_too() -> None:
    text = b"version: 1\n# loopguard: disable=unused-set\nkeyword_sets: {spare: [x]}\n"
    assert lint_bytes(text).findings == []
    assert [f.code for f in lint_bytes(text.replace(b"unused-set", b"empty-set")).findings] == [
        "unused-set"
    ]


def test_ignore_comment_after_content_silences_only_with_disable_line() -> None:
    text = b"version: 1\nkeyword_sets: {spare: [x]}  # loopguard: disable=unused-set\n"
    assert [f.code for f in lint_bytes(text).findings] == ["unused-set", "bad-directive"]


def test_disable_all_keeps_load_errors() -> None:
    text = (
        b"version: 1\n# loopguard: disable=all\nkeyword_sets: {spare: [x]}\n"
        b"turn: {max_tool_round: 3}\n"
    )
    assert [f.code for f in lint_bytes(text).findings] == ["unknown-key"]


PLUGIN = '''
import loopguard
from loopguard.lint.checks import LintCheck


def no_shouting(ctx):
    """Keyword set names are lower case.

    Passes: `keyword_sets: {buy: [buy]}`. Fails: `keyword_sets: {BUY: [buy]}`.
    """
    return [ctx.finding(("keyword_sets", name), "warning", f"keyword set {name!r} shouts",
                        "write it in lower case", "no-shouting", at_key=True)
            for name in ctx.top.get("keyword_sets") or {} if name != name.lower()]


def broken(ctx):
    raise RuntimeError("kaput")


@loopguard.hookimpl
def loopguard_register_lint_checks():
    return [LintCheck("no-shouting", "warning", no_shouting.__doc__, no_shouting),
            LintCheck("broken-check", "warning", "Always fails.", broken),
            LintCheck("unused-set", "warning", "Taken.", broken),
            "not a check"]
'''


def test_plugin_lint_checks_join_the_registry_isolated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with fake_site(tmp_path, monkeypatch) as site:
        site.add_dist("lgfake-lint", {"shout": "lgfake_lint"}, {"lgfake_lint": PLUGIN})
        site.registry()
        assert checks()["no-shouting"].origin == "lgfake-lint[shout]"
        assert checks()["unused-set"].origin == "loopguard"
        rules = tmp_path / "r.yaml"
        rules.write_text(
            "version: 1\nkeyword_sets: {BUY: [buy]}\nintents:\n"
            "  - {id: a, when: {text_contains: BUY}, require: {tool: t}}\n",
            encoding="utf-8",
        )
        code, out, err = run(capsys, "lint", str(rules))
        assert code == 0
        assert "2:16: warning[no-shouting]: keyword set 'BUY' shouts" in out
        assert (
            "warning[check-failed]: lint check 'broken-check' (lgfake-lint[shout]) failed: "
            "RuntimeError: kaput" in out
        )
        assert "'unused-set' is already registered by loopguard" in err
        assert "is not a loopguard.lint.checks.LintCheck" in err
        code, out, _ = run(capsys, "lint", "--disable", "no-shouting,broken-check", str(rules))
        assert (code, out) == (0, "")
        assert "no-shouting" in run(capsys, "lint", "--list-checks")[1]
    assert "no-shouting" not in checks()


def test_lint_check_record_is_frozen() -> None:
    check = checks()["unused-set"]
    assert isinstance(check, LintCheck)
    with pytest.raises(AttributeError):
        check.level = "error"  # type: ignore[misc]
