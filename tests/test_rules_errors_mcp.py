"""`loopguard mcp-proxy --rules R` reports R's lint errors on stderr (stdout is the JSON-RPC
channel), like every other command that runs with a rules file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

BAD = "version: 1\nloop_detection:\n  warning_threshold: 12\n  critical_threshold: 11\n"


def test_mcp_proxy_reports_them_before_serving(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    rules = tmp_path / "bad.yaml"
    rules.write_text(BAD, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "loopguard", "mcp-proxy", "--rules", str(rules), "--"]
        + [sys.executable, "-c", "import sys; sys.exit(3)"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lines = done.stderr.splitlines()
    assert lines[0] == (
        f"{rules}:4:23: error[threshold-order]: critical_threshold (11) must be greater than "
        "warning_threshold (12) [loop_detection.critical_threshold]"
    )
    assert any("1 lint error in the rules" in line for line in lines)
    assert "Traceback" not in done.stderr and done.stdout == ""
