"""Ignore comments that are not understood are reported, never silently ignored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopguard.cli import main


def _lint_json(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> list[dict]:  # type: ignore[type-arg]
    main(["lint", "--format", "json", *extra, str(path)])
    found: list[dict] = json.loads(capsys.readouterr().out)  # type: ignore[type-arg]
    return found


def test_json5_misspelt_directive_is_a_bad_directive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "openclaw.json5"
    path.write_text(
        "{\n  // loopguard: disable-lines=openclaw-ignored\n  tools: {loopDetection: "
        "{enabled: true}, exec: {}},\n}\n",
        encoding="utf-8",
    )
    found = _lint_json(path, capsys)
    bad = [f for f in found if f["code"] == "bad-directive"]
    assert [(f["line"], f["col"]) for f in bad] == [(2, 3)]
    assert "disable-lines=openclaw-ignored" in bad[0]["message"]
    assert "disable-line=CODE" in bad[0]["hint"] and "disable=CODE" in bad[0]["hint"]
    assert any(f["code"] == "openclaw-ignored" for f in found)  # it silenced nothing


def test_understood_and_unrelated_comments_are_quiet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(
        "version: 1\n# rules that loopguard reads for the refund agent\n"
        "keyword_sets:\n  hold: []  # loopguard: disable-line=empty-set,unused-set\n",
        encoding="utf-8",
    )
    assert _lint_json(path, capsys) == []


def test_the_warning_can_be_disabled_like_any_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text("version: 1\n# loopguard: ignore=everything\n", encoding="utf-8")
    assert [f["code"] for f in _lint_json(path, capsys)] == ["bad-directive"]
    assert _lint_json(path, capsys, "--disable", "bad-directive") == []


def test_the_docs_example_is_what_lint_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "rules.yaml").write_text(
        "version: 1\nkeyword_sets:\n  a: [x]\n  # loopguard: disable-next-line=empty-set\n"
        "  hold: []\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    main(["lint", "--color", "never", "rules.yaml"])
    out = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(out) if "bad-directive" in line)
    doc = (Path(__file__).resolve().parent.parent / "docs" / "rules.md").read_text("utf-8")
    assert f"{out[at]}\n{out[at + 1]}\n" in doc
