"""The integrations are optional: `import loopguard` loads no framework, each adapter names
its extra when its framework is missing, and the extras are declared (the test extra has all)."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

FRAMEWORKS = {
    "langchain": "langchain",
    "openai_agents": "agents",
    "claude_agent_sdk": "claude_agent_sdk",
    "pydantic_ai": "pydantic_ai",
    "google_adk": "google.adk",
    "strands": "strands",
    "crewai": "crewai",
    "agent_framework": "agent_framework",
}
EXTRAS = {
    "langchain": "langchain",
    "openai_agents": "openai-agents",
    "claude_agent_sdk": "claude-agent-sdk",
    "pydantic_ai": "pydantic-ai",
    "google_adk": "google-adk",
    "strands": "strands",
    "crewai": "crewai",
    "agent_framework": "agent-framework",
}


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_importing_loopguard_loads_no_framework() -> None:
    done = python(
        "import sys, loopguard, loopguard.integrations, loopguard.session.answers\n"
        f"print(sorted(m for m in {sorted(FRAMEWORKS.values())!r} if m in sys.modules))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
@pytest.mark.parametrize("adapter", sorted(FRAMEWORKS))
def test_a_missing_framework_names_the_extra(adapter: str) -> None:
    hidden = FRAMEWORKS[adapter]
    done = python(
        f"import sys\nsys.modules[{hidden!r}] = None\nimport loopguard.integrations.{adapter}"
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert (
        last.startswith("ImportError: loopguard's")
        and f"loopguard-engine[{EXTRAS[adapter]}]" in last
    )


def test_the_extras_are_declared_and_the_test_extra_has_every_framework() -> None:
    meta = metadata.metadata("loopguard-engine")
    assert set(EXTRAS.values()) <= set(meta.get_all("Provides-Extra") or [])
    test_reqs = [r for r in meta.get_all("Requires-Dist") or [] if 'extra == "test"' in r]
    for dist in (
        "langchain",
        "openai-agents",
        "claude-agent-sdk",
        "pydantic-ai-slim",
        "google-adk",
        "crewai",
        "agent-framework-core",
    ):  # not strands-agents: it needs mcp<2.2 (see pyproject)
        assert any(r.startswith(dist) for r in test_reqs), dist


def test_every_integration_package_is_listed_for_the_wheel() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    pyproject = (root / "pyproject.toml").read_text("utf-8")
    packages = [p.parent.name for p in (root / "engine" / "integrations").glob("*/__init__.py")]
    assert sorted(packages) == sorted(FRAMEWORKS)
    for name in ["", *(f".{p}" for p in packages)]:
        assert f'"loopguard.integrations{name}"' in pyproject, name
