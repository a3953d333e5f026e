"""`python -m loopguard` runs the same command as the `loopguard` entry point."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from loopguard.cli import main

pytestmark = pytest.mark.slow  # every test starts `python -m loopguard`


def module(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopguard", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_python_m_loopguard_matches_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.yaml").write_text(
        "version: 1\nturn:\n  max_tool_rouds: 3\n", encoding="utf-8"
    )
    code = main(["lint", "broken.yaml"])
    out, err = capsys.readouterr()
    ran = module("lint", "broken.yaml", cwd=tmp_path)
    assert (ran.returncode, ran.stdout, ran.stderr) == (code, out, err)
    assert code == 1 and "broken.yaml:3:3" in out


def test_python_m_loopguard_without_a_command_prints_usage_and_exits_2(tmp_path: Path) -> None:
    ran = module(cwd=tmp_path)
    assert (
        ran.returncode == 2 and "usage: loopguard" in ran.stderr and "Traceback" not in ran.stderr
    )


def test_a_subcommand_that_fails_to_import_is_not_silently_dropped(tmp_path: Path) -> None:
    """A broken install (here: lint's module unimportable) fails loudly instead of offering a
    CLI without `lint`."""
    code = (
        "import sys\nsys.modules['loopguard.cli.lint_cmd'] = None\n"
        "from loopguard.cli import build_parser\nbuild_parser()\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode != 0
    assert "loopguard.cli.lint_cmd" in ran.stderr.strip().splitlines()[-1]
