"""`.ci/run` and `.ci/each-python`: the README's command first, then every Python 3.10-3.13.

`.ci/each-python` is driven here with a fake interpreter (a shell script that
answers `-c` with its version, makes a "venv" by copying itself, installs
nothing and exits from "pytest" with the code it is told), so the version
search, the skips and the exit-code handling are tested without building venvs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # every test runs the CI shell scripts

ROOT = Path(__file__).resolve().parents[1]
EACH = ROOT / ".ci" / "each-python"
FAKE = """#!/bin/sh
case "$1" in
  -c) echo "{version}" ;;
  -m) case "$2" in
        venv) mkdir -p "$3/bin" && cp "$0" "$3/bin/python" ;;
        pip) exit 0 ;;
        pytest) echo "fake pytest {version}"; exit "${{FAKE_PYTEST_EXIT:-0}}" ;;
      esac ;;
esac
"""


def test_run_starts_with_the_readme_command_then_each_python() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = (
        'python3 -m venv .venv && . .venv/bin/activate && pip install ".[test]" && python -m pytest'
    )
    assert command in readme
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert run.index(command) < run.index('" .ci/each-python')  # the command line, not a comment
    for script in (ROOT / ".ci" / "run", EACH):
        assert os.access(script, os.X_OK)
        subprocess.run(["bash", "-n", str(script)], check=True)


def _fake(folder: Path, name: str, version: str) -> None:
    path = folder / name
    path.write_text(FAKE.format(version=version), encoding="utf-8")
    path.chmod(0o755)


def _each(tmp_path: Path, *versions: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run a copy of each-python in `tmp_path` (its venvs land there, not in the checkout)."""
    ci = tmp_path / "repo" / ".ci"
    ci.mkdir(parents=True, exist_ok=True)
    (ci / "each-python").write_bytes(EACH.read_bytes())
    (ci / "each-python").chmod(0o755)
    full = {
        "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin",
        "PYENV_ROOT": str(tmp_path / "pyenv"),
        "HOME": str(tmp_path),
        **env,
    }
    return subprocess.run(
        [str(ci / "each-python"), *versions], env=full, capture_output=True, text=True, check=False
    )


@pytest.fixture
def machine(tmp_path: Path) -> Path:
    """PATH has a working python3.98 and a pyenv shim python3.97 that does not run.

    pyenv has 3.97.2.
    """
    (tmp_path / "bin").mkdir()
    _fake(tmp_path / "bin", "python3.98", "3.98")
    shim = tmp_path / "bin" / "python3.97"
    shim.write_text("#!/bin/sh\necho 'pyenv: python3.97: command not found' >&2\nexit 127\n")
    shim.chmod(0o755)
    for build in ("3.97.1", "3.97.2"):
        folder = tmp_path / "pyenv" / "versions" / build / "bin"
        folder.mkdir(parents=True)
        _fake(folder, "python3.97", "3.97")
    return tmp_path


def test_finds_path_and_pyenv_interpreters_and_skips_missing_ones(machine: Path) -> None:
    done = _each(
        machine, "3.98", "3.97", "3.96", "3.95", LOOPGUARD_CI_DRY_RUN="1", LOOPGUARD_CI_SKIP="3.95"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"each-python: Python 3.98: {machine}/bin/python3.98 -> .ci-venv/py3.98"
    assert lines[1] == (
        f"each-python: Python 3.97: {machine}/pyenv/versions/3.97.2/bin/python3.97"
        " -> .ci-venv/py3.97"
    )
    assert lines[2] == "each-python: Python 3.96: not found on this machine; skipped"
    assert lines[3] == "each-python: Python 3.95: skipped (the main run used it)"


def test_runs_pytest_in_a_venv_per_version(machine: Path) -> None:
    done = _each(machine, "3.98", "3.97")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "fake pytest 3.98" in done.stdout and "fake pytest 3.97" in done.stdout
    assert (machine / "repo" / ".ci-venv" / "py3.97" / "bin" / "python").is_file()
    assert done.stdout.splitlines()[-1] == "each-python: passed: 3.98 3.97; failed: none"


@pytest.mark.parametrize("code", ["1", "5"])
def test_any_pytest_failure_fails_after_every_version_ran(machine: Path, code: str) -> None:
    done = _each(machine, "3.98", "3.97", FAKE_PYTEST_EXIT=code)
    assert done.returncode == 1
    assert f"each-python: Python 3.98: FAILED (exit {code})" in done.stdout
    assert "fake pytest 3.97" in done.stdout  # the next version still ran
    assert done.stdout.splitlines()[-1] == "each-python: passed: none; failed: 3.98 3.97"


def test_default_versions_are_3_10_to_3_13(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    done = _each(tmp_path, LOOPGUARD_CI_DRY_RUN="1")
    assert [line.split(":")[1].strip() for line in done.stdout.splitlines()[:4]] == [
        "Python 3.10",
        "Python 3.11",
        "Python 3.12",
        "Python 3.13",
    ]
    assert sys.version_info >= (3, 10)
