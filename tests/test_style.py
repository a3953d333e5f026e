"""The code style is pinned by ruff (configured in pyproject): formatted, and lint-clean.

One line length (100) for the formatter and the linter; the rule set is pyflakes,
pycodestyle, import order, bugbear, pyupgrade and comprehension checks.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("ruff") is None:
        pytest.fail("ruff is part of the test extra: pip install '.[test]'")
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_ruff_check_is_clean() -> None:
    done = _ruff("check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_ruff_format_leaves_every_file_as_it_is() -> None:
    done = _ruff("format", "--no-cache", "--check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_one_line_length() -> None:
    # The formatter and the linter share the one setting (no per-tool override).
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert text.count("line-length") == 1
    assert "line-length = 100" in text
    assert "max-line-length" not in text
