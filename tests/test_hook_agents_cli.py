"""`loopguard hook codex` and `loopguard hook gemini` under the real Codex CLI and Gemini CLI
(from npm, in the clone's `.agents/`), each pointed at a local scripted fake model server.

The hooks are written the way `loopguard hook install DIALECT --project` writes them, into the
test's project folder; every hook run is a new `loopguard` process found on PATH (the venv's
bin), its state a SQLite file under the test's XDG_STATE_HOME. Nothing leaves the machine (the
fakes listen on 127.0.0.1, every other request goes to a dead proxy port).

The CLIs missing: the tests skip, unless LOOPGUARD_REQUIRE_AGENTS is set (as .ci/run does),
then they fail. `LOOPGUARD_AGENTS_BIN` names another folder with the `codex` / `gemini` commands.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from agent_fakes.agents import (
    CODEX_VERSION,
    GEMINI_VERSION,
    REPO,
    AgentRun,
    CodexAgent,
    GeminiAgent,
    agent_command,
    agents_bin,
)
from agent_fakes.fake_gemini_api import FakeGeminiApi
from agent_fakes.fake_responses_api import FakeResponsesApi
from helpers import stop_servers

pytestmark = pytest.mark.slow  # runs the agents' CLIs, which run loopguard per hook event

VENV_BIN = Path(sys.executable).parent  # where the installed `loopguard` command lives
BLOCKED = "[loopguard] Blocked:"
STOPPED = "[loopguard] Stopped:"
# The repeated failing command also appends to runs.log, so a test can count how often it ran.
FAILING = "echo run >> runs.log; cat missing.txt"

# The entries `loopguard hook install DIALECT --project` writes (TEMPORARY: used only while
# the install command does not exist yet).
CODEX_EVENTS = ("UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SubagentStop",
                "PreCompact", "SessionStart")  # fmt: skip
GEMINI_EVENTS = ("BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "PreCompress",
                 "SessionStart", "SessionEnd")  # fmt: skip


def require(name: str) -> None:
    """Skip (or, under LOOPGUARD_REQUIRE_AGENTS, fail) when the agent's CLI is not installed."""
    if agent_command(name) is not None:
        return
    where = agents_bin()
    if os.environ.get("LOOPGUARD_REQUIRE_AGENTS"):
        pytest.fail(f"LOOPGUARD_REQUIRE_AGENTS is set but `{name}` is not installed in {where}")
    pytest.skip(
        f"`{name}` is not installed in {where} (npm install --prefix .agents, see .ci/run; "
        "set LOOPGUARD_REQUIRE_AGENTS=1 to make this an error)"
    )


@cache
def install_command_exists() -> bool:
    done = subprocess.run(
        [str(VENV_BIN / "loopguard"), "hook", "install", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode == 0


def install_hooks(agent: CodexAgent | GeminiAgent, dialect: str) -> None:
    """loopguard's hooks in the agent's project settings, as `hook install --project` puts them."""
    if install_command_exists():
        done = subprocess.run(
            [str(VENV_BIN / "loopguard"), "hook", "install", dialect, "--project"],
            cwd=agent.project,
            env=agent.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    elif isinstance(agent, CodexAgent):
        hooks = {
            event: [
                {
                    **({"matcher": ".*"} if event.endswith("ToolUse") else {}),
                    "hooks": [
                        {"type": "command", "command": "loopguard hook codex", "timeout": 30}
                    ],
                }
            ]
            for event in CODEX_EVENTS
        }
        agent.hooks_file.write_text(json.dumps({"hooks": hooks}), encoding="utf-8")
    else:
        hook = {"type": "command", "name": "loopguard", "command": "loopguard hook gemini"}
        settings: dict[str, Any] = {}
        if agent.settings_file.exists():
            settings = json.loads(agent.settings_file.read_text(encoding="utf-8"))
        settings["hooks"] = {
            event: [
                {
                    **({"matcher": ".*"} if event in ("BeforeTool", "AfterTool") else {}),
                    "hooks": [{**hook, "timeout": 30000}],
                }
            ]
            for event in GEMINI_EVENTS
        }
        agent.settings_file.write_text(json.dumps(settings), encoding="utf-8")
    hooks_file = agent.hooks_file if isinstance(agent, CodexAgent) else agent.settings_file
    written = json.loads(hooks_file.read_text(encoding="utf-8"))
    pre = "PreToolUse" if dialect == "codex" else "BeforeTool"
    assert f"loopguard hook {dialect}" in json.dumps(written["hooks"][pre])


def runs(agent: CodexAgent | GeminiAgent) -> int:
    """How often the failing command really ran."""
    log = agent.project / "runs.log"
    return len(log.read_text(encoding="utf-8").splitlines()) if log.exists() else 0


def no_traceback(run: AgentRun) -> None:
    assert "Traceback" not in run.stdout + run.stderr, run.stderr[-3000:]


@pytest.mark.parametrize(
    ("name", "version"), [("codex", CODEX_VERSION), ("gemini", GEMINI_VERSION)]
)
def test_the_installed_cli_is_the_pinned_version(name: str, version: str) -> None:
    """.ci/run installs the versions the fixtures and these tests were made with."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    package = "@openai/codex" if name == "codex" else "@google/gemini-cli"
    assert f"{package}@{version}" in ci
    require(name)
    command = agent_command(name)
    env = {**os.environ, "PATH": f"{agents_bin()}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [str(command), "--version"], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert version in done.stdout


# --- Codex CLI -------------------------------------------------------------------------------

SHELL = "exec_command"  # Codex's shell tool; its hooks report it as tool_name "Bash"


def codex_run(
    tmp_path: Path, turns: list[Any], setup: Callable[[CodexAgent], None] | None = None
) -> tuple[FakeResponsesApi, CodexAgent, AgentRun]:
    require("codex")
    with FakeResponsesApi(turns) as api:
        agent = CodexAgent(tmp_path, api.base_url, path_first=[VENV_BIN])
        install_hooks(agent, "codex")
        if setup is not None:
            setup(agent)
        run = agent.run("Fix the build.")
    stop_servers(agent.state, remove=False)  # (the hook servers its hooks started)
    assert run.returncode == 0, run.stderr[-3000:]
    no_traceback(run)
    return api, agent, run


def codex_outputs(api: FakeResponsesApi) -> list[str]:
    """The tool outputs the model saw, one per call, in call order (from the last request)."""
    outputs = api.function_call_outputs(len(api.requests) - 1)
    return [outputs[key] for key in sorted(outputs, key=_call_order)]


def _call_order(call_id: str) -> tuple[int, ...]:
    return tuple(int(part) for part in call_id.split("_")[1:])  # call_<response>_<index>


def test_codex_denies_the_third_identical_failing_call(tmp_path: Path) -> None:
    failing = [(SHELL, {"cmd": FAILING})]
    api, agent, _ = codex_run(tmp_path, [failing, failing, failing, "I will stop here."])
    outputs = codex_outputs(api)
    assert len(api.requests) == 4
    assert len(outputs) == 3
    assert all("No such file or directory" in out for out in outputs[:2]), outputs
    assert outputs[2].startswith("Command blocked by PreToolUse hook:"), outputs[2]
    assert BLOCKED in outputs[2] and "3 times" in outputs[2]
    assert runs(agent) == 2  # the third call never ran


def test_codex_keeps_denying_a_model_that_repeats_after_the_breaker(tmp_path: Path) -> None:
    failing = [(SHELL, {"cmd": FAILING})]
    turns: list[Any] = [failing] * 6 + ["Giving up."]
    api, agent, run = codex_run(tmp_path, turns)
    outputs = codex_outputs(api)
    assert runs(agent) == 2  # nothing ran after the first block
    assert BLOCKED in outputs[2]
    assert STOPPED in outputs[3]  # the breaker: the fourth call
    assert all(STOPPED in out for out in outputs[3:]), outputs[3:]
    # Codex has no hook answer that ends its turn (see docs/hooks.md): the model goes on until
    # it answers; the guard only keeps every further call from running. No request beyond the
    # script's was made, and the agent ended with the model's answer.
    assert len(api.requests) == len(turns)
    assert '"type":"turn.completed"' in run.stdout.replace(" ", "")


def test_codex_healthy_run_with_a_parallel_batch_is_never_blocked(tmp_path: Path) -> None:
    def files(agent: CodexAgent) -> None:
        for name in ("a.txt", "b.txt", "c.txt"):
            (agent.project / name).write_text(f"content of {name}\n", encoding="utf-8")

    turns: list[Any] = [
        [(SHELL, {"cmd": "ls"})],
        [
            (SHELL, {"cmd": "cat a.txt"}),
            (SHELL, {"cmd": "cat b.txt"}),
            (SHELL, {"cmd": "cat c.txt"}),
        ],
        [(SHELL, {"cmd": "wc -l a.txt b.txt"})],
        [(SHELL, {"cmd": "cat missing.txt"})],
        "All three files read.",
    ]
    api, _, _ = codex_run(tmp_path, turns, files)
    outputs = codex_outputs(api)
    assert len(outputs) == 6
    assert not any("[loopguard]" in out or "blocked" in out for out in outputs), outputs
    assert [f"content of {n}.txt" in out for n, out in zip("abc", outputs[1:4], strict=True)] == [
        True
    ] * 3
    assert len(api.requests) == 5


# --- Gemini CLI ------------------------------------------------------------------------------

GSHELL = "run_shell_command"


def gemini_run(
    tmp_path: Path, turns: list[Any], setup: Callable[[GeminiAgent], None] | None = None
) -> tuple[FakeGeminiApi, GeminiAgent, AgentRun]:
    require("gemini")
    with FakeGeminiApi(turns) as api:
        agent = GeminiAgent(tmp_path, api.base_url, path_first=[VENV_BIN])
        install_hooks(agent, "gemini")
        if setup is not None:
            setup(agent)
        run = agent.run("Fix the build.")
    stop_servers(agent.state, remove=False)  # (the hook servers its hooks started)
    assert run.returncode == 0, run.stderr[-3000:]
    no_traceback(run)
    return api, agent, run


def gemini_outputs(api: FakeGeminiApi) -> list[str]:
    """What the model saw for each call, in order: the output, or the error text."""
    seen = []
    for response in api.function_responses(len(api.requests) - 1):
        body = response.get("response") or {}
        seen.append(str(body.get("error") if "error" in body else body.get("output", body)))
    return seen


def test_gemini_denies_the_third_identical_failing_call(tmp_path: Path) -> None:
    failing = [(GSHELL, {"command": FAILING})]
    api, agent, _ = gemini_run(tmp_path, [failing, failing, failing, "I will stop here."])
    outputs = gemini_outputs(api)
    assert len(api.requests) == 4
    assert all("No such file or directory" in out for out in outputs[:2]), outputs
    assert outputs[2].startswith("Tool execution blocked:"), outputs[2]
    assert BLOCKED in outputs[2] and "3 times" in outputs[2]
    assert runs(agent) == 2


def test_gemini_ends_the_agent_loop_at_the_breaker(tmp_path: Path) -> None:
    failing = [(GSHELL, {"command": FAILING})]
    api, agent, run = gemini_run(tmp_path, [failing] * 6 + ["Giving up."])
    # Calls 1-2 ran, 3 was blocked, 4 tripped the breaker: `continue: false` ends the loop, so
    # the model is not asked again after the fourth call.
    assert runs(agent) == 2
    assert len(api.requests) == 4, [gemini_outputs(api)]
    assert BLOCKED in gemini_outputs(api)[2]
    assert "Agent execution stopped" in run.stderr


def test_gemini_healthy_run_with_a_parallel_batch_is_never_blocked(tmp_path: Path) -> None:
    def files(agent: GeminiAgent) -> None:
        for name in ("a.txt", "b.txt", "c.txt"):
            (agent.project / name).write_text(f"content of {name}\n", encoding="utf-8")

    turns: list[Any] = [
        [(GSHELL, {"command": "ls"})],
        [
            ("read_file", {"file_path": "a.txt"}),
            ("read_file", {"file_path": "b.txt"}),
            ("read_file", {"file_path": "c.txt"}),
        ],
        [(GSHELL, {"command": "wc -l a.txt b.txt"})],
        [(GSHELL, {"command": "cat missing.txt"})],
        "All three files read.",
    ]
    api, _, _ = gemini_run(tmp_path, turns, files)
    outputs = gemini_outputs(api)
    assert len(outputs) == 6
    assert not any("[loopguard]" in out or "blocked" in out for out in outputs), outputs
    assert [f"content of {n}.txt" in out for n, out in zip("abc", outputs[1:4], strict=True)] == [
        True
    ] * 3
    assert len(api.requests) == 5
