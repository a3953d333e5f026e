"""A transcript named twice is replayed once, with a warning, not twice into one session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopguard.cli import main

ROOT = Path(__file__).resolve().parent.parent
POLL = "examples/transcripts/stuck-poll.anthropic.json"


def _records(capsys: pytest.CaptureFixture[str], *files: str) -> tuple[list[dict], str]:  # type: ignore[type-arg]
    main(["replay", *files, "--format", "json"])
    out, err = capsys.readouterr()
    return [json.loads(line) for line in out.splitlines()], err


def test_the_same_file_twice_is_replayed_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    once, _ = _records(capsys, POLL)
    twice, err = _records(capsys, POLL, "./" + POLL, str(ROOT / POLL))
    assert twice == once
    assert err.count("is given twice") == 2 and "it is replayed once" in err
    first = next(r for r in twice if r["record"] == "decision")
    assert first["seq"] == next(r for r in once if r["record"] == "decision")["seq"]


def test_explain_numbers_the_file_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["explain", POLL, "-d", "1", "--format", "json"]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert main(["explain", POLL, POLL, "-d", "1", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == alone and "is given twice" in err
