"""`store.path` in a rules file is confined to the rules file's folder tree the way `extends:`
is (issue 22, item 22): lint reports one that leaves it at its `file:line:col`, loading refuses
it before any database is created, and `allow_extends_outside` allows both.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import loopguard
from loopguard.cli import main
from loopguard.errors import RulesError
from loopguard.stores import SqliteStore

OUTSIDE = {
    "dotdot": "../../outside/created-by-rules.db",
    "absolute": "{outside}/abs.db",
    "home": "~/loopguard-test-never-created.db",
    "symlink": "link/state.db",
}


def _tree(tmp_path: Path, case: str) -> tuple[Path, Path]:
    """(rules file, the folder outside the rules tree) with `store.path` written for `case`."""
    rules_dir = tmp_path / "project" / "rules"
    rules_dir.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    if case == "symlink":
        os.symlink(outside, rules_dir / "link")
    path = OUTSIDE[case].format(outside=outside)
    rules = rules_dir / "loopguard.yaml"
    rules.write_text(f"version: 1\nstore:\n  path: {path}\n", encoding="utf-8")
    return rules, outside


@pytest.mark.parametrize("case", sorted(OUTSIDE))
def test_lint_reports_a_store_path_outside_at_its_position(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules, _ = _tree(tmp_path, case)
    assert main(["lint", "--color", "never", str(rules)]) == 1  # used to lint clean
    out = capsys.readouterr().out
    assert f"{rules}:3:9: error[store-path]: store.path " in out
    assert "points outside the rules file's folder" in out


@pytest.mark.parametrize("case", sorted(OUTSIDE))
def test_loading_refuses_it_and_creates_nothing(case: str, tmp_path: Path) -> None:
    rules, outside = _tree(tmp_path, case)
    with pytest.raises(RulesError) as caught:
        loopguard.Guard.from_file(rules)
    assert [f.code for f in caught.value.findings] == ["store-path"]
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "outside" / "created-by-rules.db").exists()


def test_allow_extends_outside_allows_it_too(tmp_path: Path) -> None:
    rules, outside = _tree(tmp_path, "absolute")
    guard = loopguard.Guard.from_file(rules, allow_extends_outside=True)
    assert isinstance(guard.store, SqliteStore)
    assert main(["lint", "--allow-extends-outside", str(rules)]) == 0


def test_a_path_inside_the_tree_is_fine(tmp_path: Path) -> None:
    rules_dir = tmp_path / "rules"
    (rules_dir / "state").mkdir(parents=True)
    rules = rules_dir / "loopguard.yaml"
    rules.write_text("version: 1\nstore: {path: state/sessions.db}\n", encoding="utf-8")
    guard = loopguard.Guard.from_file(rules)
    guard.session("s").before_call("read", {"path": "a"})
    assert (rules_dir / "state" / "sessions.db").exists()


def test_a_store_path_in_an_extended_file_is_confined_too(tmp_path: Path) -> None:
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    (rules_dir / "shared.yaml").write_text(
        "version: 1\n\nstore: {path: /tmp/elsewhere.db}\n", encoding="utf-8"
    )
    top = rules_dir / "loopguard.yaml"
    top.write_text("version: 1\nextends: [shared.yaml]\n", encoding="utf-8")
    with pytest.raises(RulesError) as caught:
        loopguard.Guard.from_file(top)
    finding = caught.value.findings[0]
    assert (finding.code, finding.line) == ("store-path", 3)
    assert finding.file.endswith("shared.yaml")


def test_rules_from_a_mapping_are_confined_to_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    with pytest.raises(RulesError):
        loopguard.Guard.from_dict({"version": 1, "store": {"path": "../up.db"}})
    guard = loopguard.Guard.from_dict({"version": 1, "store": {"path": "here.db"}})
    assert isinstance(guard.store, SqliteStore)
