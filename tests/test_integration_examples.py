"""The examples in examples/integrations run offline and stop their looping model."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "integrations"
STOPPED = "final answer: [loopguard] Stopped: check_build was called 6 times"


NEEDS_311 = pytest.mark.skipif(
    sys.version_info < (3, 11),
    reason="LangChain 1.5, pydantic-ai 2.68 and google-adk 2.13 need Python 3.11+",
)
NEEDS_STRANDS = pytest.mark.skipif(
    find_spec("strands") is None,
    reason="strands-agents is not in the test extra (it needs mcp<2.2); .ci/run tests it apart",
)


def run_example(name: str, **extra_env: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.update(extra_env)
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=EXAMPLES,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        pytest.param("with_langchain.py", marks=NEEDS_311),
        "with_openai_agents.py",
        pytest.param("with_pydantic_ai.py", marks=NEEDS_311),
        pytest.param("with_google_adk.py", marks=NEEDS_311),
        pytest.param("with_strands.py", marks=NEEDS_STRANDS),
        "with_agent_framework.py",
    ],
)
def test_a_framework_example_stops_its_looping_model(name: str) -> None:
    out = run_example(name)
    assert out.count("ran check_build(job=7)") == 5
    assert STOPPED in out


@pytest.mark.slow
@pytest.mark.skipif(sys.version_info >= (3, 14), reason="crewai 1.6 supports Python 3.10-3.13")
def test_the_crewai_example_stops_its_looping_model(tmp_path: Path) -> None:
    # CrewAI answers an identical repeat itself (the tool runs once); loopguard ends the loop.
    out = run_example("with_crewai.py", HOME=str(tmp_path))  # CrewAI writes under ~/.local
    assert out.count("ran check_build(job=7)") == 1
    assert "the crew stopped after 7 model calls" in out
    assert "final answer: [loopguard] Stopped: check_build was called 3 times" in out


@pytest.mark.slow
def test_the_claude_example_stops_the_cli() -> None:
    out = run_example("with_claude_agent_sdk.py")
    assert out.count("model asked for Bash") == 7
    assert "the CLI stopped after 7 model calls" in out
    assert 'last tool result the model saw: PreToolUse:Bash hook error: {"status": "blocked"' in out
