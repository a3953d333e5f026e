"""A user's program type-checks against the public API: `loopguard.run_turn`, `arun_turn`,
`TurnResult` and `TurnEvent` are visible to mypy, although `import loopguard` loads the
runtime only on first use (a module `__getattr__`, which mypy cannot see through).

One deliberate error in the program proves mypy knows the real types: were they `Any` (or
`object`, what `__getattr__` returns), that line would pass or every line would fail.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = """\
from __future__ import annotations

import asyncio
from typing import Any

import loopguard


def model(messages: list[dict[str, Any]], tools_enabled: bool = True) -> dict[str, Any]:
    return {"role": "assistant", "content": "done"}


session = loopguard.Guard.default().session("s")
result: loopguard.TurnResult = loopguard.run_turn(model, {}, [{"role": "user", "content": "hi"}],
                                                  session, run_id="r1")
text: str = result.text
events: list[loopguard.TurnEvent] = result.events


async def main() -> str:
    done = await loopguard.arun_turn(model, {"t": lambda args: args}, [], session)
    return done.text


print(text, events, asyncio.run(main()))
wrong: int = result.text  # the one expected error
"""


def link_tree(target: Path) -> Path:
    """The package laid out as installed, by `scripts/typecheck.py` (mypy follows it)."""
    spec = importlib.util.spec_from_file_location("typecheck", ROOT / "scripts" / "typecheck.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.link_tree(target)  # type: ignore[no-any-return]


@pytest.mark.slow
def test_a_user_program_calling_run_turn_type_checks(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is part of the test extra")
    tree = link_tree(tmp_path / "site")
    program = tmp_path / "user_program.py"
    program.write_text(PROGRAM, encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-incremental",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            str(program),
        ],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(tree)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    # the package's own errors are test_typing's business: here only the program's count
    errors = [
        line
        for line in done.stdout.splitlines()
        if re.match(r"user_program\.py:\d+: error: ", line)
    ]
    wrong = PROGRAM.splitlines().index("wrong: int = result.text  # the one expected error") + 1
    assert done.returncode == 1 and len(errors) == 1, done.stdout + done.stderr  # 1: errors found
    assert f"user_program.py:{wrong}: error: Incompatible types in assignment" in errors[0]
    assert '(expression has type "str", variable has type "int")' in errors[0]
