"""The package is typed throughout: mypy (disallow_untyped_defs) passes on `loopguard` as it
imports.

`scripts/typecheck.py` lays the package out as installed (links) so mypy follows every
`loopguard.` import; checking `engine/` as a folder would leave those imports unresolved.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # mypy over the whole package in a subprocess

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_passes() -> None:
    pytest.importorskip("mypy", reason="mypy is part of the test extra")
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "typecheck.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
