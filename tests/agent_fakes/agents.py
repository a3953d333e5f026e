"""Run the real Codex CLI and Gemini CLI offline: a temp home and project, the agent's config
pointing at a local fake model server, and every other outbound request sent to a dead port.

The CLIs come from npm (`npm install --prefix .agents @openai/codex@X @google/gemini-cli@Y`, as
.ci/run does); `LOOPGUARD_AGENTS_BIN` names another folder holding the `codex` and `gemini`
commands. That folder is on the agents' PATH, so a `node` installed there (npm `node@20`, for
machines whose Node is older than Gemini CLI needs) is the one they run on.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DEAD_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens, nothing leaves
CODEX_VERSION = "0.171.0"
GEMINI_VERSION = "0.61.0"
CODEX_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "SubagentStart",
    "SubagentStop",
    "Stop",
    "StopFailure",
)
GEMINI_EVENTS = (
    "SessionStart",
    "BeforeAgent",
    "PreCompress",
    "BeforeToolSelection",
    "BeforeTool",
    "AfterTool",
    "AfterAgent",
    "Notification",
    "SessionEnd",
)
GEMINI_TOOL_EVENTS = ("BeforeTool", "AfterTool")


def agents_bin() -> Path:
    return Path(
        os.environ.get("LOOPGUARD_AGENTS_BIN") or REPO / ".agents" / "node_modules" / ".bin"
    )


def agent_command(name: str) -> Path | None:
    """The installed `codex` or `gemini` command, or None when it is not there."""
    path = agents_bin() / name
    return path if path.exists() and os.access(path, os.X_OK) else None


@dataclass
class AgentRun:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def offline_env(home: Path, state: Path, path_first: Sequence[Path] = ()) -> dict[str, str]:
    """A minimal environment: temp HOME and XDG_STATE_HOME, dead proxies, PATH (+ folders first)."""
    path = os.pathsep.join([*map(str, path_first), os.environ.get("PATH", os.defpath)])
    env = {
        "PATH": path,
        "HOME": str(home),
        "XDG_STATE_HOME": str(state),
        "LANG": "C.UTF-8",
        "NO_COLOR": "1",
        "LOOPGUARD_HOOK_SERVER_IDLE": "2",  # a hook server ends 2 s after its last event
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        env[name] = DEAD_PROXY
    return env


def _run(command: list[str], cwd: Path, env: Mapping[str, str], timeout: float) -> AgentRun:
    started = time.monotonic()
    done = subprocess.run(
        command,
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return AgentRun(done.returncode, done.stdout, done.stderr, time.monotonic() - started)


class CodexAgent:
    """`codex exec` in `root/project`, CODEX_HOME in `root/home/.codex`, the fake as provider."""

    def __init__(self, root: Path, base_url: str, path_first: Sequence[Path] = ()) -> None:
        self.home = root / "home"
        self.codex_home = self.home / ".codex"
        self.project = root / "project"
        self.state = root / "state"
        for folder in (self.codex_home, self.project / ".codex", self.state):
            folder.mkdir(parents=True, exist_ok=True)
        self.env = offline_env(self.home, self.state, [*path_first, agents_bin()])
        self.env["CODEX_HOME"] = str(self.codex_home)
        self.env["FAKE_OPENAI_KEY"] = "sk-fake"
        self.env["RUST_LOG"] = "error"
        config = f"""model = "gpt-5.1-codex"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "{base_url}"
wire_api = "responses"
env_key = "FAKE_OPENAI_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[projects.{json.dumps(str(self.project))}]
trust_level = "trusted"
"""
        (self.codex_home / "config.toml").write_text(config, encoding="utf-8")

    @property
    def hooks_file(self) -> Path:
        return self.project / ".codex" / "hooks.json"

    def write_hooks(self, commands: Mapping[str, str], timeout: int = 30) -> None:
        """One command hook per event (matcher-less: every tool) in the project's hooks.json."""
        hooks = {
            event: [{"hooks": [{"type": "command", "command": command, "timeout": timeout}]}]
            for event, command in commands.items()
        }
        self.hooks_file.write_text(json.dumps({"hooks": hooks}, indent=2), encoding="utf-8")

    def run(self, prompt: str, timeout: float = 90) -> AgentRun:
        command = agent_command("codex")
        assert command is not None, f"codex is not installed in {agents_bin()}"
        return _run(
            [
                str(command),
                "exec",
                "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox",
                "--dangerously-bypass-hook-trust",  # hooks.json is not reviewed in the TUI here
                "--json",
                prompt,
            ],
            self.project,
            self.env,
            timeout,
        )


class GeminiAgent:
    """`gemini -p PROMPT --yolo` in `root/project`, HOME in `root/home`, the fake as the API."""

    def __init__(self, root: Path, base_url: str, path_first: Sequence[Path] = ()) -> None:
        self.home = root / "home"
        self.project = root / "project"
        self.state = root / "state"
        for folder in (self.home / ".gemini", self.project / ".gemini", self.state):
            folder.mkdir(parents=True, exist_ok=True)
        self.env = offline_env(self.home, self.state, [*path_first, agents_bin()])
        self.env["GEMINI_API_KEY"] = "fake-key"
        self.env["GOOGLE_GEMINI_BASE_URL"] = base_url
        self.env["GEMINI_CLI_TRUST_WORKSPACE"] = "true"
        user_settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
            "model": {"disableLoopDetection": True},
        }
        (self.home / ".gemini" / "settings.json").write_text(
            json.dumps(user_settings, indent=2), encoding="utf-8"
        )

    @property
    def settings_file(self) -> Path:
        return self.project / ".gemini" / "settings.json"

    def write_hooks(self, commands: Mapping[str, str], timeout_ms: int = 30000) -> None:
        """One named command hook per event in the project's settings.json (keeps other keys)."""
        settings: dict[str, Any] = {}
        if self.settings_file.exists():
            settings = json.loads(self.settings_file.read_text(encoding="utf-8"))
        settings["hooks"] = {
            event: [
                {
                    "matcher": "*" if event in GEMINI_TOOL_EVENTS else "",
                    "hooks": [
                        {
                            "type": "command",
                            "name": f"capture-{event}",
                            "command": command,
                            "timeout": timeout_ms,
                        }
                    ],
                }
            ]
            for event, command in commands.items()
        }
        self.settings_file.write_text(json.dumps(settings, indent=2), encoding="utf-8")

    def run(self, prompt: str, timeout: float = 90) -> AgentRun:
        command = agent_command("gemini")
        assert command is not None, f"gemini is not installed in {agents_bin()}"
        return _run(
            [str(command), "-p", prompt, "--yolo", "-m", "gemini-2.5-flash"],
            self.project,
            self.env,
            timeout,
        )


def capture_command(capture_file: Path, event: str, delay: float = 0.0) -> str:
    """The shell command of a capture hook (tests/agent_fakes/capture_hook.py) for one event."""
    script = Path(__file__).with_name("capture_hook.py")
    parts = [sys.executable, str(script), str(capture_file), event]
    if delay:
        parts.append(str(delay))
    return shlex.join(parts)


def read_captures(capture_file: Path) -> list[dict[str, Any]]:
    """The capture hook's records, in the order the hooks finished."""
    if not capture_file.exists():
        return []
    return [json.loads(line) for line in capture_file.read_text(encoding="utf-8").splitlines()]
