"""`loopguard detectors` (text and JSON, faults, --strict) and `loopguard lint`
validating a plugin's options, with plugins installed as fake `*.dist-info` folders.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from plugin_fakes import BUILTINS, EXAMPLE_SOURCE, FakeSite

from loopguard.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def listed(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, _ = run(capsys, "detectors", "--format", "json")
    assert code == 0
    result: dict[str, Any] = json.loads(out)
    return result


# -- loopguard detectors --------------------------------------------------------


def test_json_lists_the_builtins_then_the_plugin(
    site: FakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    site.add_example()
    site.registry()
    result = listed(capsys)
    assert [d["id"] for d in result["detectors"]] == [*BUILTINS, "error_cascade"]
    assert result["faults"] == []
    plugin = result["detectors"][-1]
    assert plugin == {
        "id": "error_cascade",
        "source": EXAMPLE_SOURCE,
        "distribution": "loopguard-error-cascade",
        "entry": "error_cascade",
        "builtin": False,
        "levels": ["warn", "critical"],
        "gating": "always",
        "settings": ["loop_detection.history_size"],
        "lint_checks": ["error-cascade-unreachable"],
        "options": {
            "threshold": {"schema": plugin["options"]["threshold"]["schema"], "default": 4},
            "level": {"schema": plugin["options"]["level"]["schema"], "default": "warn"},
        },
    }
    assert plugin["options"]["threshold"]["schema"]["minimum"] == 2


def test_builtin_defaults_come_from_their_options_schemas(
    site: FakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    site.registry()
    by_id = {d["id"]: d for d in listed(capsys)["detectors"]}
    exact = by_id["doom_loop_exact"]
    assert (exact["source"], exact["builtin"], exact["levels"], exact["gating"]) == (
        "loopguard-engine[doom_loop_exact]",
        True,
        ["warn", "critical", "breaker"],
        "always",
    )
    assert {name: o.get("default") for name, o in exact["options"].items()} == {
        "window": 30,
        "threshold": 3,
        "exempt": ["check_background_tasks"],
        "outcome": "same",
        "scope": "session",
        "level": "critical",
        "poll_threshold": 6,
        "read_only_tools": [],
        "changing_tools": [],
        "commentary_fields": ["description", "reason", "explanation", "justification", "thought"],
    }
    assert by_id["generic_repeat"]["gating"] == "rolling"
    assert by_id["post_compaction_guard"]["gating"] == "unless_disabled"


def test_text_output_shows_source_levels_gating_and_options(
    site: FakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    site.add_example()
    site.registry()
    code, out, _ = run(capsys, "detectors")
    assert code == 0
    lines = out.splitlines()
    start = lines.index(f"error_cascade  (plugin: {EXAMPLE_SOURCE})")
    assert lines[start + 1 : start + 7] == [
        "  levels: warn, critical; gating: always",
        "  reads: loop_detection.history_size",
        "  lint checks: error-cascade-unreachable",
        "  options:",
        "    threshold  integer >= 2     default 4",
        "    level      warn | critical  default warn",
    ]
    assert "doom_loop_exact  (built-in: loopguard-engine[doom_loop_exact])" in lines
    assert lines[-1] == "10 detectors (9 built-in, 1 plugin), 0 faults"


def test_faults_are_listed_by_name_and_fatal_only_with_strict(
    site: FakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    site.add_example()
    site.add_dist("lgfake-broken", {"broken": "lgfake_missing_module"})
    site.registry()
    result = listed(capsys)
    assert len(result["detectors"]) == 10
    assert result["faults"] == [
        {
            "source": "lgfake-broken[broken]",
            "stage": "import",
            "message": "ModuleNotFoundError: No module named 'lgfake_missing_module'",
        }
    ]
    code, out, _ = run(capsys, "detectors")
    assert code == 0
    assert (
        "  lgfake-broken[broken]: import failed: ModuleNotFoundError: "
        "No module named 'lgfake_missing_module'"
    ) in out.splitlines()
    assert out.splitlines()[-1] == "10 detectors (9 built-in, 1 plugin), 1 fault"
    assert run(capsys, "detectors", "--strict")[0] == 1


def test_strict_without_faults_exits_zero(
    site: FakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    site.registry()
    assert run(capsys, "detectors", "--strict")[0] == 0


def test_a_bad_format_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "detectors", "--format", "xml")
    assert code == 2 and "invalid choice" in err


# -- loopguard lint validates the plugin's options ------------------------------


def lint(capsys: pytest.CaptureFixture[str], tmp_path: Path, options: str) -> tuple[int, str]:
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        f"version: 1\nextends: [builtin:default]\ndetectors:\n  error_cascade:\n{options}",
        encoding="utf-8",
    )
    code, out, _ = run(capsys, "lint", "--format", "json", str(rules))
    return code, out


@pytest.mark.parametrize(
    "options",
    [
        "    threshold: 2\n    level: critical\n",
        "    enabled: false\n",
        "    threshold: 6\n",
    ],
)
def test_lint_accepts_valid_plugin_options(
    site: FakeSite, capsys: pytest.CaptureFixture[str], tmp_path: Path, options: str
) -> None:
    site.add_example()
    site.registry()
    assert lint(capsys, tmp_path, options) == (0, "[]\n")


@pytest.mark.parametrize(
    ("options", "line", "path"),
    [
        ("    threshold: 1\n", 5, "detectors.error_cascade.threshold"),
        ("    level: breaker\n", 5, "detectors.error_cascade.level"),
        ("    threshold: 4\n    colour: red\n", 6, "detectors.error_cascade.colour"),
    ],
)
def test_lint_rejects_invalid_plugin_options(
    site: FakeSite,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    options: str,
    line: int,
    path: str,
) -> None:
    site.add_example()
    site.registry()
    code, out = lint(capsys, tmp_path, options)
    assert code == 1
    errors = [f for f in json.loads(out) if f["level"] == "error"]
    assert [(f["line"], f["path"]) for f in errors] == [(line, path)]


def test_lint_without_the_plugin_reports_an_unknown_detector(
    site: FakeSite, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    site.registry()
    code, out = lint(capsys, tmp_path, "    threshold: 4\n")
    assert code == 1
    assert [f["path"] for f in json.loads(out)] == ["detectors.error_cascade"]
