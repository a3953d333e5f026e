"""Example rules files under tests/lint_cases, found automatically.

`valid/*` must lint with no output and exit 0. Each `invalid/<name>.<ext>` has a
golden `invalid/<name>.expected` holding lint's exact text output; the exit code
must be 1 when the golden output has an error, 0 when it has only warnings. An
optional `invalid/<name>.args` holds extra lint arguments, one per line
(`--disable=CODE`, `--agent=A`, `--color=always`, ...).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loopguard.cli import main

CASES = Path(__file__).parent / "lint_cases"
SUFFIXES = (".yaml", ".yml", ".json5", ".json")


def _files(folder: str) -> list[Path]:
    return sorted(p for p in (CASES / folder).iterdir() if p.suffix in SUFFIXES and p.is_file())


def test_the_case_folders_are_not_empty() -> None:
    assert len(_files("valid")) >= 4
    assert len(_files("invalid")) >= 15


@pytest.mark.parametrize("path", _files("valid"), ids=lambda p: p.name)
def test_valid_case_lints_clean(
    path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(CASES)
    code = main(["lint", f"valid/{path.name}"])
    out = capsys.readouterr().out
    assert out == ""
    assert code == 0


@pytest.mark.parametrize("path", _files("invalid"), ids=lambda p: p.name)
def test_invalid_case_matches_its_golden_output(
    path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = path.with_suffix(".expected")
    assert golden.is_file(), f"missing golden file {golden.name}"
    expected = golden.read_text(encoding="utf-8")
    extra = path.with_suffix(".args")
    args = extra.read_text(encoding="utf-8").split() if extra.is_file() else []
    monkeypatch.chdir(CASES)
    monkeypatch.delenv("NO_COLOR", raising=False)
    code = main(["lint", *args, f"invalid/{path.name}"])
    out = capsys.readouterr().out
    assert out == expected
    assert expected.strip(), "an invalid case must produce findings"
    plain = re.sub(r"\x1b\[[0-9;]*m", "", expected)  # the colour case
    assert code == (1 if ": error[" in plain else 0)


def test_every_golden_file_has_its_case() -> None:
    stems = {p.stem for p in _files("invalid")}
    orphans = [
        g.name
        for suffix in ("*.expected", "*.args")
        for g in (CASES / "invalid").glob(suffix)
        if g.stem not in stems
    ]
    assert orphans == []
