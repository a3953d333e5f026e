"""The README's promises: its Python examples print what it shows, its quickstart is what CI
runs."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

import loopguard

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text("utf-8")


def _pairs() -> list[tuple[str, str]]:
    """Each ```python block with the ```text block right after it."""
    pattern = r"```python\n((?:(?!```).)*)```\s*\n```text\n((?:(?!```).)*)```"
    return re.findall(pattern, README, re.DOTALL)


def _clean(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip().splitlines()]


@pytest.mark.parametrize("index", range(len(_pairs())))
def test_python_examples_print_what_the_readme_shows(index: int) -> None:
    code, shown = _pairs()[index]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"README.md example {index + 1}", "exec"), {"__name__": "readme"})
    assert _clean(out.getvalue()) == _clean(shown)


def test_there_are_examples_and_the_agent_loop_is_short() -> None:
    pairs = _pairs()
    assert len(pairs) >= 2
    loop = next(code for code, _ in pairs if "run_turn" in code)
    assert len(loop.strip().splitlines()) < 30


def test_quickstart_is_two_commands_and_ci_runs_the_test_one() -> None:
    quickstart = README.split("## Quickstart", 1)[1]
    block = re.search(r"```sh\n(.*?)```", quickstart, re.DOTALL)
    assert block is not None
    commands = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2
    assert "loopguard replay" in commands[0]
    ci = (ROOT / ".ci" / "run").read_text("utf-8")
    assert commands[1] in ci


def test_quickstart_report_lines_are_what_replay_prints(capsys: pytest.CaptureFixture[str]) -> None:
    from loopguard.cli import main

    quickstart = README.split("## Quickstart", 1)[1]
    shown = re.search(r"```text\n(.*?)```", quickstart, re.DOTALL)
    assert shown is not None
    files = sorted(
        str(p.relative_to(ROOT)) for p in (ROOT / "examples" / "transcripts").glob("*.json*")
    )
    cwd = os.getcwd()
    os.chdir(ROOT)  # the report names files as given, relative to the clone
    try:
        assert main(["replay", *files]) == 0
    finally:
        os.chdir(cwd)
    printed = capsys.readouterr().out.splitlines()
    lines = [line for line in shown.group(1).splitlines() if line.strip() and line != "…"]
    assert len(lines) >= 10
    for line in lines:
        assert line in printed, line


def test_the_annotated_rules_example_lints_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from loopguard.cli import main

    section = README.split("## Rules files", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert block is not None
    rules = tmp_path / "rules.yaml"
    rules.write_text(block.group(1), "utf-8")
    assert main(["lint", "--strict", str(rules)]) == 0, capsys.readouterr().out
    guard = loopguard.Guard.from_file(rules)
    assert guard.policy("safe-runner").config["loop_detection"]["warning_threshold"] == 8


def test_the_detector_walkthrough_code_defines_a_valid_plugin() -> None:
    from jsonschema import Draft202012Validator

    section = README.split("## Write a detector", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert block is not None
    scope: dict[str, object] = {"__name__": "readme_plugin"}
    exec(compile(block.group(1), "README.md detector", "exec"), scope)
    detectors = scope["loopguard_register_detectors"]()  # type: ignore[operator]
    assert [d.id for d in detectors] == ["error_cascade"]
    Draft202012Validator.check_schema(detectors[0].options_schema)
    assert detectors[0].configure({}, {}) == (4, "warn")
