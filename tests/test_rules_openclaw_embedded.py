"""An OpenClaw block pasted into a native rules file is translated and merged (issue 24, item 13).

The native key wins where both set a value, and lint warns at the OpenClaw value.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import loopguard
from loopguard.cli import main
from loopguard.config.layers import load
from loopguard.lint.linter import lint_bytes

MIXED = """\
version: 1
extends: [builtin:default]
loop_detection:
  warning_threshold: 8
detectors:
  ping_pong: {enabled: false}
tools:
  loopDetection:
    warningThreshold: 10
    criticalThreshold: 20
    detectors: {pingPong: true, genericRepeat: true}
agents:
  reviewer: {loop_detection: {warning_threshold: 5}}
  list:
    - id: safe-runner
      tools: {loopDetection: {warningThreshold: 12, criticalThreshold: 16}}
"""

MIXED_JSON5 = """\
{
  version: 1,
  loop_detection: { warning_threshold: 8 },
  // pasted from the OpenClaw docs:
  tools: { loopDetection: { warningThreshold: 10, criticalThreshold: 20, } },
  agents: { list: [ { id: "safe-runner", tools: { loopDetection: { enabled: true } } } ] },
}
"""


def test_the_block_is_translated_and_merged_with_the_native_keys() -> None:
    data = load(MIXED, "text", "mixed.yaml").data
    assert "tools" not in data
    loop = data["loop_detection"]
    assert (loop["warning_threshold"], loop["critical_threshold"]) == (8, 20)  # native wins
    assert data["detectors"]["ping_pong"] == {"enabled": False}
    assert data["detectors"]["generic_repeat"] == {"enabled": True}
    assert data["agents"]["reviewer"] == {"loop_detection": {"warning_threshold": 5}}
    agent = data["agents"]["safe-runner"]["loop_detection"]
    assert (agent["warning_threshold"], agent["critical_threshold"]) == (12, 16)


def test_lint_reports_each_conflict_where_the_openclaw_value_is_written() -> None:
    found = [
        (f.line, f.col, f.level, f.code, f.path)
        for f in lint_bytes(MIXED.encode(), "mixed.yaml").findings
    ]
    assert found == [
        (9, 23, "warning", "openclaw-conflict", "tools.loopDetection.warningThreshold"),
        (11, 27, "warning", "openclaw-conflict", "tools.loopDetection.detectors.pingPong"),
    ]


def test_the_cli_lints_a_mixed_file_with_file_line_col(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "loopguard.yaml"
    path.write_text(MIXED, encoding="utf-8")
    assert main(["lint", str(path)]) == 0  # warnings only
    out = capsys.readouterr().out
    assert f"{path}:9:23: warning[openclaw-conflict]: tools.loopDetection.warningThreshold" in out
    assert "overridden by loop_detection.warning_threshold (8) on line 4" in out
    assert "unknown key" not in out
    assert main(["lint", "--strict", str(path)]) == 1


def test_a_guard_loads_the_mixed_file(tmp_path: Path) -> None:
    path = tmp_path / "loopguard.yaml"
    path.write_text(MIXED, encoding="utf-8")
    guard = loopguard.Guard.from_file(path)
    loop = guard.session("s").config["loop_detection"]
    assert (loop["warning_threshold"], loop["critical_threshold"]) == (8, 20)
    runner = guard.session("t", agent="safe-runner").config["loop_detection"]
    assert (runner["warning_threshold"], runner["critical_threshold"]) == (12, 16)
    assert guard.session("u", agent="reviewer").config["loop_detection"]["warning_threshold"] == 5


def test_a_json5_native_file_with_the_block() -> None:
    data = load(MIXED_JSON5, "text", "mixed.json5").data
    loop = data["loop_detection"]
    assert (loop["warning_threshold"], loop["critical_threshold"]) == (8, 20)
    assert data["agents"] == {"safe-runner": {"loop_detection": {"enabled": True}}}
    [finding] = lint_bytes(MIXED_JSON5.encode(), "mixed.json5").findings
    assert (finding.line, finding.code) == (5, "openclaw-conflict")


def test_the_same_value_written_both_ways_is_no_conflict() -> None:
    text = "version: 1\nloop_detection: {warning_threshold: 8}\n"
    text += "tools: {loopDetection: {warningThreshold: 8}}\n"
    assert lint_bytes(text.encode(), "same.yaml").findings == []


def test_a_native_key_beside_an_openclaw_block_without_version_is_native() -> None:
    text = "loop_detection: {warning_threshold: 8}\ntools: {loopDetection: {enabled: true}}\n"
    codes = [f.code for f in lint_bytes(text.encode(), "nov.yaml").findings]
    assert codes == ["version"]  # not "loop_detection is ignored"


def test_the_conflict_warning_can_be_disabled(tmp_path: Path) -> None:
    path = tmp_path / "loopguard.yaml"
    path.write_text(MIXED, encoding="utf-8")
    assert main(["lint", "--strict", "--disable", "openclaw-conflict", str(path)]) == 0


def test_json_format_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "loopguard.yaml"
    path.write_text(MIXED, encoding="utf-8")
    main(["lint", "--format", "json", str(path)])
    [first, _] = json.loads(capsys.readouterr().out)
    assert (first["file"], first["line"], first["col"]) == (str(path), 9, 23)


def test_the_docs_example_is_what_lint_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "rules.md").read_text("utf-8")
    section = doc.split("The same blocks may also be pasted into a native rules file", 1)[1]
    rules = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    printed = section.split("```text\n", 1)[1].split("```", 1)[0]
    (tmp_path / "rules.yaml").write_text(rules, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    main(["lint", "rules.yaml"])
    assert capsys.readouterr().out.strip() == printed.strip()
