"""The agent loop in docs/turns.md runs offline and prints exactly the documented output."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "turns.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", DOC.read_text("utf-8"), re.DOTALL)


def test_the_documented_agent_loop_runs_and_prints_its_output() -> None:
    code = _blocks("python")[0]
    assert len(code.strip().splitlines()) < 30
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), {"__name__": "turns_doc"})
    assert out.getvalue() == _blocks("text")[0]
