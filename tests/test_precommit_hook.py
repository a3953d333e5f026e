"""The `loopguard-lint` pre-commit hook, run for real by pre-commit from a project's config.

pre-commit clones the hook repository and pip-installs it into a fresh virtual environment
(dependencies come from PyPI). The hook repository here is a clone of this checkout's HEAD,
so what is tested is exactly what is committed. The project's `.pre-commit-config.yaml`
names it at that commit and both runs share one pre-commit cache: the hook's environment is
built once for the module. (`pre-commit try-repo` would build it again for every run: it
keeps its store in a temporary directory whatever PRE_COMMIT_HOME says.)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_the_hook_is_declared_with_a_files_pattern() -> None:
    [hook] = HOOKS
    assert hook["id"] == "loopguard-lint" and hook["entry"] == "loopguard lint"
    assert hook["language"] == "python"
    pattern = re.compile(hook["files"])
    for name in (
        "loopguard.yaml",
        "conf/loopguard-ops.yml",
        "loopguard/team.yaml",
        "agents/loopguard/a/b.json5",
    ):
        assert pattern.search(name), name
    for name in ("rules.yaml", ".github/workflows/ci.yml", "loopguard.toml", "myloopguard/x.txt"):
        assert not pattern.search(name), name


@pytest.fixture(scope="module")
def pre_commit(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout of loopguard")
    base = tmp_path_factory.mktemp("precommit")
    source, project = base / "loopguard-src", base / "project"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", ROOT.as_uri(), str(source)],
        check=True,
        capture_output=True,
    )
    rev = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=source, check=True, capture_output=True, text=True
    ).stdout.strip()
    project.mkdir()
    _git("init", "-q", cwd=project)
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {source.as_uri()}\n  rev: {rev}\n  hooks:\n  - id: loopguard-lint\n",
        encoding="utf-8",
    )
    (project / "loopguard.yaml").write_text(
        "version: 1\nloop_detection: {warning_threshold: 5, critical_threshold: 9}\n",
        encoding="utf-8",
    )
    (project / "loopguard").mkdir()
    (project / "loopguard" / "broken.yaml").write_text(
        "version: 1\nloop_detection: {warning_treshold: 5}\n", encoding="utf-8"
    )
    (project / "unrelated.yaml").write_text("not: [a rules file\n", encoding="utf-8")
    _git("add", ".", cwd=project)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRE_COMMIT", "VIRTUAL_ENV"))}
    env["PRE_COMMIT_HOME"] = str(base / "cache")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "pre_commit",
                "run",
                "loopguard-lint",
                "--color",
                "never",
                *args,
            ],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )

    return run


@pytest.mark.slow
def test_the_hook_passes_a_good_rules_file(pre_commit) -> None:  # type: ignore[no-untyped-def]
    done = pre_commit("--files", "loopguard.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"loopguard lint\.+Passed", done.stdout)


@pytest.mark.slow
def test_the_hook_fails_a_bad_rules_file_and_names_the_finding(pre_commit) -> None:  # type: ignore[no-untyped-def]
    done = pre_commit("--all-files")
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"loopguard lint\.+Failed", done.stdout)
    assert (
        "loopguard/broken.yaml:2:18: error[unknown-key]: unknown key 'warning_treshold'"
        in done.stdout
    )
    assert "unrelated.yaml" not in done.stdout  # outside the hook's files pattern
    assert "2 files, 1 error" in done.stdout
