"""The real `loopguard` process with streams it cannot use (issue 22, item 15): what only a
process shows, the interpreter's final flush of a buffered stdout into /dev/full and file
descriptors closed by the shell. One line on stderr, exit 2 (the hook: exit 0, the call
allowed), never a traceback or "Exception ignored".
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test starts the command

SAMPLE = next(p for p in sorted((Path(__file__).parent / "agent_samples").iterdir()))
SH = shutil.which("sh")


def run(shell: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`shell` with $LG standing for the loopguard command (this interpreter's)."""
    env = {
        **os.environ,
        "LG": f"{sys.executable} -m loopguard",
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "LOOPGUARD_HOOK_SERVER": "off",
    }
    assert SH is not None
    return subprocess.run(
        [SH, "-c", shell], capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path
    )


@pytest.mark.skipif(SH is None or not os.path.exists("/dev/full"), reason="needs sh, /dev/full")
@pytest.mark.parametrize(
    "shell, code, said",
    [
        (f"$LG replay '{SAMPLE}' > /dev/full", 2, "No space left on device"),
        ("$LG schema > /dev/full", 2, "No space left on device"),
        (f"$LG replay '{SAMPLE}' >&-", 2, "standard output is closed"),
        ("$LG lint - <&-", 2, "standard input is closed"),
        ("$LG replay - <&-", 2, "standard input is closed"),
        ("$LG hook claude <&-", 0, "the call is allowed"),
    ],
    ids=[
        "replay-full",
        "schema-full",
        "replay-closed-stdout",
        "lint-closed-stdin",
        "replay-closed-stdin",
        "hook-closed-stdin",
    ],
)
def test_one_line_never_a_traceback(shell: str, code: int, said: str, tmp_path: Path) -> None:
    done = run(shell, tmp_path)
    assert done.returncode == code, done.stderr
    assert said in done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
