"""`explain` labels each history entry by what its result meant, not by how it arrived."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopguard.cli import main

REDO = str(
    Path(__file__).resolve().parent.parent
    / "examples"
    / "transcripts"
    / "redo-after-compaction.responses.json"
)


def _history_lines(text: str) -> dict[str, str]:
    """call number -> its outcome cell, from the text history table."""
    table = text.split("outcome          where\n")[1].split("\n\n")[0]
    cells = {}
    for line in table.splitlines():
        parts = line[3:].split()  # after the mark column
        cells[parts[0]] = parts[3]
    return cells


def test_failed_calls_are_labelled_failed_in_the_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", REDO, "--decision", "1"]) == 0
    out = capsys.readouterr().out
    assert "failed the same way" in out
    cells = _history_lines(out)
    assert cells["3"].startswith("failed:") and cells["4"].startswith("failed:")
    assert cells["5"] == "veto"
    assert cells["1"].startswith("unread:")  # made once before: its result was never judged
    assert not any(cell.startswith("ok:") for cell in cells.values())


def test_json_rows_carry_the_same_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", REDO, "--decision", "1", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["history"]
    assert [row["verdict"] for row in rows] == ["unread", "unread", "failed", "failed", "veto"]
    main(["explain", REDO, "--decision", "1"])
    cells = _history_lines(capsys.readouterr().out)
    assert [cells[str(row["seq"])].split(":")[0] for row in rows] == [
        row["verdict"] for row in rows
    ]
