"""The example plugin does everything a built-in can, through the real CLI: its options'
defaults come from its schema, it reads a shared setting (`loop_detection.history_size`),
ships a lint check (`error-cascade-unreachable`) that `loopguard lint` runs, lists and
disables, and `loopguard explain` / `loopguard detectors` show what it declares.

The plugin is "installed" as a fake `*.dist-info` folder (see `plugin_fakes`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from plugin_fakes import EXAMPLE_SOURCE, FakeSite, fake_site

from loopguard.cli import main

CODE = "error-cascade-unreachable"


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSite]:
    with fake_site(tmp_path, monkeypatch) as fake:
        fake.add_example()
        fake.registry()
        yield fake


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def rules(tmp_path: Path, text: str) -> str:
    path = tmp_path / "rules.yaml"
    path.write_text(f"version: 1\n{text}", encoding="utf-8")
    return str(path)


def test_lint_runs_the_plugins_own_check(
    site: FakeSite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = rules(
        tmp_path,
        "loop_detection: {history_size: 30}\ndetectors:\n  error_cascade:\n    threshold: 40\n",
    )
    code, out, _ = run(capsys, "lint", "--format", "json", path)
    found = json.loads(out)
    assert code == 0  # a warning
    assert [(f["line"], f["col"], f["code"], f["level"], f["path"]) for f in found] == [
        (5, 16, CODE, "warning", "detectors.error_cascade.threshold")
    ]
    assert "history_size is 30" in found[0]["message"]


def test_the_check_reads_each_agents_effective_settings(
    site: FakeSite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its default threshold (4) is fine globally, not for an agent keeping 3 calls."""
    path = rules(tmp_path, "agents:\n  tiny:\n    loop_detection: {history_size: 3}\n")
    _, out, _ = run(capsys, "lint", "--format", "json", path)  # (history_size 3 has errors too)
    found = [f for f in json.loads(out) if f["code"] == CODE]
    assert len(found) == 1
    assert "for agent 'tiny'" in found[0]["message"] and "threshold 4" in found[0]["message"]


def test_a_clean_file_and_a_disabled_check_report_nothing(
    site: FakeSite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = rules(tmp_path, "detectors:\n  error_cascade: {threshold: 5}\n")
    assert run(capsys, "lint", "--format", "json", clean)[:2] == (0, "[]\n")
    path = rules(tmp_path, "detectors:\n  error_cascade: {threshold: 31}\n")
    assert CODE in run(capsys, "lint", path)[1]
    code, out, _ = run(capsys, "lint", "--disable", CODE, path)
    assert code == 0 and CODE not in out


def test_list_checks_names_the_plugin_as_the_checks_origin(
    site: FakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "lint", "--list-checks")
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith(CODE))
    assert line.split()[1:3] == ["warning", "on"]
    code, out, _ = run(capsys, "lint", "--list-checks", "--format", "json")
    listed = {row["code"]: row for row in json.loads(out)}
    assert code == 0 and listed[CODE]["origin"] == EXAMPLE_SOURCE
    assert "Fails: `detectors: {error_cascade: {threshold: 40}}`" in listed[CODE]["doc"]


def test_without_the_plugin_its_check_is_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = rules(tmp_path, "loop_detection: {history_size: 30}\n")
    code, _, err = run(capsys, "lint", "--disable", CODE, path)
    assert code == 2 and f"unknown lint check {CODE!r}" in err


def test_detectors_shows_its_setting_check_and_schema_defaults(
    site: FakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "detectors", "--format", "json")
    plugin = json.loads(out)["detectors"][-1]
    assert code == 0 and plugin["id"] == "error_cascade"
    assert (plugin["settings"], plugin["lint_checks"]) == (["loop_detection.history_size"], [CODE])
    assert {k: v["default"] for k, v in plugin["options"].items()} == {
        "threshold": 4,
        "level": "warn",
    }


def _failing_fetches(tmp_path: Path) -> str:
    """Five `fetch` calls with different URLs, each failing: the fifth is warned about."""
    rows = [{"event": "user_message", "session_id": "s", "run_id": "r", "text": "get the page"}]
    for i in range(5):
        rows.append(
            {
                "event": "assistant_message",
                "session_id": "s",
                "run_id": "r",
                "text": "",
                "tool_calls": [
                    {"id": f"c{i}", "name": "fetch", "arguments": {"url": f"https://x/{i}"}}
                ],
            }
        )
        rows.append(
            {
                "event": "tool_result",
                "session_id": "s",
                "run_id": "r",
                "call_id": f"c{i}",
                "name": "fetch",
                "content": "HTTP 500: upstream unavailable",
                "is_error": True,
            }
        )
    path = tmp_path / "fetches.eventlog.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def test_explain_shows_the_plugins_setting_and_option_defaults(
    site: FakeSite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript = _failing_fetches(tmp_path)
    code, out, _ = run(capsys, "explain", transcript, "--decision", "1", "--format", "json")
    assert code == 0, out
    result = json.loads(out)
    assert result["decision"]["detector"] == "error_cascade"
    assert result["thresholds"] == {
        "loop_detection.history_size": 30,
        "detectors.error_cascade.threshold": 4,
        "detectors.error_cascade.level": "warn",
        "aggregator.warn_every": 10,
    }
    code, text, _ = run(capsys, "explain", transcript, "--decision", "1")
    assert code == 0 and "  detectors.error_cascade.threshold = 4" in text.splitlines()


def test_an_openclaw_config_reaches_it_by_its_declared_name(
    site: FakeSite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "openclaw.json5"
    path.write_text(
        "{tools: {loopDetection: {detectors: {errorCascade: false}}}}\n", encoding="utf-8"
    )
    code, out, _ = run(capsys, "config", "--rules", str(path), "--format", "json")
    assert code == 0, out
    assert json.loads(out)["config"]["detectors"]["error_cascade"]["enabled"] is False


def test_detectors_with_rules_shows_the_effective_shared_settings(
    site: FakeSite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = rules(tmp_path, "loop_detection: {history_size: 12}\n")
    code, out, _ = run(capsys, "detectors", "--rules", path, "--format", "json")
    by_id = {d["id"]: d for d in json.loads(out)["detectors"]}
    assert code == 0
    assert by_id["error_cascade"]["settings"] == {"loop_detection.history_size": 12}
    assert by_id["global_circuit_breaker"]["settings"]["loop_detection.history_size"] == 12
