"""Every `replay` format reports every input problem, not only a count in the summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopguard.cli import main

HEALTHY = str(
    Path(__file__).resolve().parent.parent
    / "examples"
    / "transcripts"
    / "healthy-refactor.eventlog.jsonl"
)


@pytest.fixture
def broken(tmp_path: Path) -> list[str]:
    """Three inputs that cannot be read: not JSON, empty, missing."""
    not_json = tmp_path / "notes.json"
    not_json.write_text("just some notes\n", encoding="utf-8")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    return [str(not_json), str(empty), str(tmp_path / "missing.json")]


def _replay(
    capsys: pytest.CaptureFixture[str], broken: list[str], fmt: str
) -> tuple[int, str, str]:
    code = main(["replay", *broken, HEALTHY, "--format", fmt])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_has_an_error_record_per_unreadable_input(
    capsys: pytest.CaptureFixture[str], broken: list[str]
) -> None:
    code, out, err = _replay(capsys, broken, "json")
    assert code == 2
    records = [json.loads(line) for line in out.splitlines()]
    errors = [r for r in records if r["record"] == "error"]
    assert sorted(r["file"] for r in errors) == sorted(broken)
    assert all(r["line"] >= 1 and r["code"] and r["message"] for r in errors)
    assert records[-1]["record"] == "summary" and records[-1]["input_errors"] == 3
    assert all(name in err for name in broken)  # stderr still says so


def test_github_has_an_error_annotation_per_unreadable_input(
    capsys: pytest.CaptureFixture[str], broken: list[str]
) -> None:
    code, out, _ = _replay(capsys, broken, "github")
    assert code == 2
    annotated = [
        line.split("file=", 1)[1].split(",", 1)[0]
        for line in out.splitlines()
        if line.startswith("::error ") and "unreadable input" in line
    ]
    assert sorted(annotated) == sorted(broken)


def test_text_lists_them_in_the_report(
    capsys: pytest.CaptureFixture[str], broken: list[str], tmp_path: Path
) -> None:
    report = tmp_path / "report.txt"
    assert main(["replay", *broken, HEALTHY, "-o", str(report)]) == 2
    capsys.readouterr()
    text = report.read_text("utf-8")
    assert "\ninput errors (3):\n" in text
    assert all(f"  {name}:1:1: " in text for name in broken)


def test_html_keeps_them_among_the_problems(
    capsys: pytest.CaptureFixture[str], broken: list[str], tmp_path: Path
) -> None:
    page = tmp_path / "report.html"
    assert main(["replay", *broken, HEALTHY, "--format", "html", "-o", str(page)]) == 2
    capsys.readouterr()
    html = page.read_text("utf-8")
    assert all(json.dumps(f"{name}:1:1")[1:-1] in html for name in broken)
