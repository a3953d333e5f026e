"""Command output quoted in docs/replay.md is what the commands print today."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from loopguard.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _quoted(doc: str) -> list[tuple[str, list[str]]]:
    """(command, the output lines shown under it) for each `$ loopguard …` in a code block."""
    found = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", doc, re.DOTALL):
        lines = block.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("$ loopguard "):
                shown = []
                for after in lines[i + 1 :]:
                    if after.startswith("$ "):
                        break
                    shown.append(after)
                found.append((line[2:], shown))
    return found


CASES = _quoted((ROOT / "docs" / "replay.md").read_text("utf-8"))


def test_the_replay_docs_quote_commands() -> None:
    assert len(CASES) >= 3


@pytest.mark.parametrize("command,shown", CASES, ids=[c for c, _ in CASES])
def test_quoted_output_matches(
    command: str, shown: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    cwd = os.getcwd()
    os.chdir(ROOT)  # the docs name files relative to the repository
    try:
        main(shlex.split(command)[1:])
    finally:
        os.chdir(cwd)
    printed = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    for line in shown:
        if line.strip():
            assert line.rstrip() in printed, line
