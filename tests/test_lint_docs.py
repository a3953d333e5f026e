"""docs/rules.md lists every lint check as the registry describes it (generated, kept in sync)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from loopguard.lint.linter import checks

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "lint_checks_doc.py"


def _script() -> object:
    spec = importlib.util.spec_from_file_location("lint_checks_doc", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_table_is_what_the_script_generates() -> None:
    doc = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert _script().rendered(doc) == doc  # type: ignore[attr-defined]


def test_every_registered_code_is_documented() -> None:
    doc = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    for code, check in checks().items():
        if check.origin == "loopguard":
            assert f"| `{code}` | {check.level} |" in doc
            assert f"#### `{code}` ({check.level}" in doc


@pytest.mark.slow
def test_check_mode_fails_on_a_stale_table(tmp_path: Path) -> None:
    module = _script()
    stale = (
        (ROOT / "docs" / "rules.md")
        .read_text(encoding="utf-8")
        .replace("| `unused-set` |", "| `unused-sets` |")
    )
    assert module.rendered(stale) != stale  # type: ignore[attr-defined]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
