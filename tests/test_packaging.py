"""The distribution's shape: what a user gets from `pip install`."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
import zipfile
from importlib import metadata, resources
from pathlib import Path

import pytest
import yaml

import loopguard
import loopguard.detectors
from loopguard.detection.plugins import GROUP

ROOT = Path(__file__).resolve().parents[1]


def test_bundled_rules_and_schemas_are_package_data() -> None:
    rules = resources.files("loopguard.rules")
    default = yaml.safe_load(rules.joinpath("default.yaml").read_text(encoding="utf-8"))
    assert default["version"] == 1
    assert default["loop_detection"]["history_size"] == 30
    schema = json.loads(
        resources.files("loopguard.schemas")
        .joinpath("rules.schema.json")
        .read_text(encoding="utf-8")
    )
    assert schema["$schema"].endswith("2020-12/schema")


def test_console_script_and_entry_points_are_declared() -> None:
    dist = metadata.distribution("loopguard-engine")
    scripts = {ep.name: ep.value for ep in dist.entry_points if ep.group == "console_scripts"}
    assert scripts == {"loopguard": "loopguard.cli:main"}
    plugins = {ep.name: ep.value for ep in dist.entry_points if ep.group == GROUP}
    assert plugins.pop("otel") == "loopguard.integrations.otel"  # the OpenTelemetry extra
    assert plugins.pop("lint_checks") == "loopguard.lint.checks"
    # The rest are the detectors: each module of loopguard.detectors has its entry point,
    # named after the module, and the module registers the detector of that id.
    modules = sorted(
        info.name for info in pkgutil.iter_modules(loopguard.detectors.__path__) if not info.ispkg
    )
    assert plugins == {name: f"loopguard.detectors.{name}" for name in modules}
    for name in modules:
        module = importlib.import_module(f"loopguard.detectors.{name}")
        assert [d.id for d in module.loopguard_register_detectors()] == [name]


@pytest.mark.slow
def test_the_installed_command_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "loopguard.cli", "detectors"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "doom_loop_fuzzy" in done.stdout


def test_guard_default_loads_the_bundled_pack() -> None:
    guard = loopguard.Guard.default()
    ids = [stage.detector.id for stage in guard.policy().stages]
    # in aggregator.order (default.yaml): a cycle wins a tie over doom_loop_exact (issue 21)
    assert ids == ["post_compaction_guard", "cycle", "doom_loop_exact", "doom_loop_fuzzy"]


@pytest.mark.slow
def test_wheel_maps_folders_into_loopguard_only(tmp_path: Path) -> None:
    """A built wheel holds loopguard/…, never a bare engine/, detectors/, rules/ or schemas/."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {done.stderr.strip()[-300:]}")
    wheel = next(tmp_path.glob("loopguard_engine-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"loopguard", next(t for t in tops if t.endswith(".dist-info"))}
    for needed in (
        "loopguard/rules/default.yaml",
        "loopguard/rules/portfolio.yaml",
        "loopguard/rules/portfolio-en.yaml",
        "loopguard/schemas/rules.schema.json",
        "loopguard/py.typed",
        "loopguard/detectors/ping_pong.py",
        "loopguard/cli/__init__.py",
        "loopguard/replay/transcripts/__init__.py",
    ):
        assert needed in names
    # Every module of the source tree ships (a subpackage missing from pyproject's
    # `packages` list would leave its modules out of the wheel).
    for folder, package in (("engine", "loopguard"), ("detectors", "loopguard/detectors")):
        for source in (ROOT / folder).rglob("*.py"):
            if "__pycache__" not in source.parts:
                relative = source.relative_to(ROOT / folder).as_posix()
                assert f"{package}/{relative}" in names, relative


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    from loopguard.cli import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"loopguard {metadata.version('loopguard-engine')}"
