"""`loopguard lint DIR` lints the rules files in DIR, not every YAML file of the project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopguard.cli import main

PRE_COMMIT = Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".pre-commit-hooks.yaml").write_text(
        PRE_COMMIT.read_text("utf-8"), encoding="utf-8"
    )
    (tmp_path / "docker-compose.yml").write_text(
        'version: "3.8"\nservices:\n  web: {image: nginx}\n', encoding="utf-8"
    )
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "refund.yaml").write_text(
        "version: 1\nloop_detection: {warning_treshold: 4}\n", encoding="utf-8"
    )
    (tmp_path / "config" / "loopguard").mkdir(parents=True)
    (tmp_path / "config" / "loopguard" / "broken.yaml").write_text("extends: [x\n", "utf-8")
    return tmp_path


def test_other_tools_yaml_is_skipped_and_said_so(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["lint", "--format", "json", str(project)])
    out, err = capsys.readouterr()
    files = sorted({Path(f["file"]).relative_to(project).as_posix() for f in json.loads(out)})
    assert files == ["config/loopguard/broken.yaml", "rules/refund.yaml"]
    assert code == 1
    assert "skipped 2 files that are not rules files" in err
    assert "docker-compose.yml" in err and ".pre-commit-hooks.yaml" in err


def test_a_file_named_explicitly_is_linted(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["lint", "--format", "json", str(project / "docker-compose.yml")])
    found = json.loads(capsys.readouterr().out)
    assert code == 1 and found and all(f["file"].endswith("docker-compose.yml") for f in found)


def test_a_directory_of_other_yaml_only_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "docker-compose.yml").write_text('version: "3"\nservices: {}\n', "utf-8")
    assert main(["lint", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "skipped 1 file that is not a rules file" in err and "no rules files" in err


def test_the_docs_example_is_what_lint_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".pre-commit-hooks.yaml").write_text(
        PRE_COMMIT.read_text("utf-8"), encoding="utf-8"
    )
    (tmp_path / "docker-compose.yml").write_text('version: "3"\nservices: {}\n', "utf-8")
    (tmp_path / "loopguard.yaml").write_text("version: 1\n", "utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["lint", "."]) == 0
    skipped = capsys.readouterr().err.splitlines()[0]
    doc = (PRE_COMMIT.parent / "docs" / "rules.md").read_text("utf-8")
    assert f"\n{skipped}\n" in doc
