"""`loopguard hook claude` under the real Claude Code CLI (the one the claude-agent-sdk wheel
bundles), pointed at the local fake Messages API: the hooks come from `loopguard hook install
claude --project` in the test's project folder, each hook run is a new `loopguard` process and
the state lives in a SQLite file under the test's XDG_STATE_HOME. Nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import claude_agent_sdk
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "integrations"))
from fake_messages_api import FakeMessagesApi  # noqa: E402 — the example folder is on the path now

pytestmark = pytest.mark.slow  # runs the Claude Code CLI, which runs loopguard per hook event

CLAUDE = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
VENV_BIN = Path(sys.executable).parent  # where the installed `loopguard` command lives
BLOCKED = "[loopguard] Blocked: Bash was called 3 times"


@dataclass
class Agent:
    """A project folder with loopguard's hooks installed, and the folders the CLI runs with."""

    project: Path
    home: Path
    state: Path
    server: bool = True  # the hook server (loopguard's default); False: a process per event

    def env(self, **extra: str) -> dict[str, str]:
        return {
            # a hook server lives 2 s after its last event (the default is 600 s), so none
            # outlives its test; "off": every event answered by its own process
            "LOOPGUARD_HOOK_SERVER_IDLE": "2",
            **({} if self.server else {"LOOPGUARD_HOOK_SERVER": "off"}),
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(self.home),
            "CLAUDE_CONFIG_DIR": str(self.home),
            "XDG_STATE_HOME": str(self.state),
            "ANTHROPIC_API_KEY": "sk-ant-fake-offline",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            **extra,
        }

    def failures(self) -> list[str]:
        """hooks.log's lines: every time the hook failed open (allowed a call it could not
        decide). Empty in a healthy run."""
        log = self.state / "loopguard" / "hooks.log"
        return log.read_text().splitlines() if log.exists() else []

    def servers_gone(self, within_s: float = 20.0) -> bool:
        """Wait for the hook servers this agent's hooks started to exit (each removes its
        socket in the state folder when it goes)."""
        deadline = time.monotonic() + within_s
        while list((self.state / "loopguard").glob("hook-*.sock")):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        return True

    def loopguard(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(VENV_BIN / "loopguard"), *args],
            cwd=self.project,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )

    def claude(self, api: FakeMessagesApi, prompt: str, max_turns: int = 10) -> dict[str, Any]:
        """One `claude -p` run; its JSON result."""
        return self.stream(api, prompt, max_turns, output="json")[-1]

    def stream(
        self, api: FakeMessagesApi, prompt: str, max_turns: int = 10, output: str = "stream-json"
    ) -> list[dict[str, Any]]:
        """One `claude -p` run; the JSON lines it printed (the result last)."""
        done = subprocess.run(
            [
                str(CLAUDE),
                "-p",
                prompt,
                "--allowedTools",
                "Bash",
                "Read",
                "--max-turns",
                str(max_turns),
                "--model",
                "claude-sonnet-4-5",
                "--output-format",
                output,
                *(["--verbose"] if output == "stream-json" else []),
                "--setting-sources",
                "project",
            ],
            cwd=self.project,
            env=self.env(ANTHROPIC_BASE_URL=api.url),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def new_agent(folder: Path, server: bool = True) -> Agent:
    """Folders under `folder`, the hooks installed the way a user does it."""
    agent = Agent(folder / "project", folder / "home", folder / "state", server)
    for path in (agent.project, agent.home):
        path.mkdir(parents=True)
    installed = agent.loopguard("hook", "install", "claude", "--project")
    assert installed.returncode == 0, installed.stderr
    settings = json.loads((agent.project / ".claude" / "settings.json").read_text())
    for event in ("UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolBatch", "Stop"):
        (entry,) = settings["hooks"][event]
        # the plain word: the `loopguard` on the agent's PATH is the one that installed it
        assert entry["hooks"][0]["command"] == "loopguard hook claude"
    return agent


@pytest.fixture(params=[True], ids=["server"])
def agent(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Agent]:
    folders = new_agent(tmp_path, server=request.param)
    yield folders
    assert folders.servers_gone(), "a hook server outlived its idle time"


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of a request's last message (what the model sees of its calls)."""
    content = request["messages"][-1]["content"]
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


def repeat_until(call: tuple[str, dict[str, Any]], give_up: str | None) -> Callable[..., Any]:
    """A model that asks for `call` again and again; once it sees loopguard's reason among its
    results it answers `give_up` (None: it never gives up)."""

    def reply(body: dict[str, Any]) -> Any:
        seen = " ".join(result_text(b) for b in tool_results(body))
        if give_up is not None and "[loopguard]" in seen:
            return give_up
        return [call]

    return reply


def failing_call(agent: Agent, log: Path) -> tuple[str, dict[str, Any]]:
    command = f"echo ran >> {log}; ls {agent.project / 'no-such-dir'}"
    return ("Bash", {"command": command, "description": "list the build folder"})


@pytest.mark.parametrize("agent", [True, False], ids=["server", "one-shot"], indirect=True)
def test_the_third_identical_failing_call_is_denied_and_the_model_sees_why(agent: Agent) -> None:
    log = agent.project / "runs.log"
    reply = repeat_until(failing_call(agent, log), give_up="The folder is missing; stopping.")
    with FakeMessagesApi("Bash", reply) as api:
        result = agent.claude(api, "list the build folder")
        conversation = api.conversation()
    assert log.read_text().split() == ["ran", "ran"]  # the third call never ran
    assert len(conversation) == 4  # prompt, two failures, the denial; then the model answered
    for request in conversation[1:3]:  # the command's own failure, not the guard
        (failure,) = tool_results(request)
        assert failure["is_error"] is True and "No such file" in result_text(failure)
        assert "[loopguard]" not in result_text(failure)
    (denied,) = tool_results(conversation[3])
    assert denied["is_error"] is True and BLOCKED in result_text(denied)
    assert result["terminal_reason"] == "completed"  # a deny alone does not end the turn
    assert result["result"] == "The folder is missing; stopping."
    assert [d["tool_use_id"] for d in result["permission_denials"]] == [denied["tool_use_id"]]
    assert agent.failures() == []


@dataclass
class Run:
    """A finished `claude -p` run: its JSON result and the model requests it made."""

    agent: Agent
    result: dict[str, Any]
    conversation: list[dict[str, Any]]
    log: Path


@pytest.fixture(scope="module")
def stubborn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """One run of a model that repeats the failing call whatever it is told (shared by the
    tests below: each CLI run costs seconds)."""
    agent = new_agent(tmp_path_factory.mktemp("stubborn"))
    log = agent.project / "runs.log"
    with FakeMessagesApi("Bash", repeat_until(failing_call(agent, log), give_up=None)) as api:
        result = agent.claude(api, "list the build folder", max_turns=12)
        conversation = api.conversation()
    yield Run(agent, result, conversation, log)
    assert agent.servers_gone(), "a hook server outlived its idle time"


def test_a_model_that_keeps_going_has_its_turn_ended(stubborn: Run) -> None:
    result, conversation = stubborn.result, stubborn.conversation
    assert stubborn.log.read_text().split() == ["ran", "ran"]
    (denied,) = tool_results(conversation[3])
    assert BLOCKED in result_text(denied)
    # the fourth call tripped the breaker: denied, and the CLI stopped without asking again
    assert len(conversation) == 4
    assert result["terminal_reason"] == "hook_stopped" and result["result"] == ""
    third, fourth = [d["tool_use_id"] for d in result["permission_denials"]]
    assert third == denied["tool_use_id"]
    assert fourth not in {b["tool_use_id"] for r in conversation for b in tool_results(r)}
    assert stubborn.agent.failures() == []


def decisions(agent: Agent, session_id: str) -> list[dict[str, Any]]:
    """`loopguard hook status SESSION --format json`: the hook's decisions, oldest first."""
    status = agent.loopguard("hook", "status", session_id, "--format", "json")
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["session"] == session_id
    return report["decisions"]  # type: ignore[no-any-return]


def test_the_status_names_the_denied_calls_detector(stubborn: Run) -> None:
    rows = [
        (row["event"], row["decision"], row["detector"])
        for row in decisions(stubborn.agent, stubborn.result["session_id"])
        if row["event"] in ("PreToolUse", "PostToolUseFailure")
    ]
    assert rows == [
        ("PreToolUse", "allow", None),
        ("PostToolUseFailure", "failed:allow", None),
        ("PreToolUse", "allow", None),
        ("PostToolUseFailure", "failed:allow", None),
        ("PreToolUse", "critical", "doom_loop_exact"),
        ("PreToolUse", "breaker", "doom_loop_exact"),
    ]


def test_a_parallel_batch_of_different_reads_is_not_a_loop(agent: Agent) -> None:
    names = [f"part{i}.txt" for i in range(4)]
    for name in names:
        (agent.project / name).write_text(f"contents of {name}\n")
    replies = iter(
        [
            [("Read", {"file_path": str(agent.project / name)}) for name in names],
            [("Bash", {"command": f"cat {name}", "description": "show"}) for name in names[:2]],
            "All parts read.",
        ]
    )
    with FakeMessagesApi("Bash", lambda body: next(replies)) as api:
        result = agent.claude(api, "read every part")
        conversation = api.conversation()
    assert len(conversation) == 3
    reads, cats = tool_results(conversation[1]), tool_results(conversation[2])
    assert len(reads) == 4 and len(cats) == 2
    for block in reads + cats:
        assert block.get("is_error") is not True and "[loopguard]" not in result_text(block)
    assert all(f"contents of {name}" in json.dumps(reads) for name in names)
    assert result["terminal_reason"] == "completed" and result["permission_denials"] == []
    assert result["result"] == "All parts read."
    assert agent.failures() == []  # the hooks of one response run at once: none failed open
    seen = sorted(
        (row["event"], row["decision"])
        for row in decisions(agent, result["session_id"])
        if row["event"] in ("PreToolUse", "PostToolUse")
    )
    assert seen == [("PostToolUse", "ran:allow")] * 6 + [("PreToolUse", "allow")] * 6


def test_the_same_read_three_times_in_one_response_is_warned_not_denied(agent: Agent) -> None:
    """Calls of one response were chosen together, before any result: a duplicate among them
    is worth a note to the model, not a denial (a per-call counter would deny the third)."""
    (agent.project / "notes.txt").write_text("the notes\n")
    read = ("Read", {"file_path": str(agent.project / "notes.txt")})
    replies = iter([[read, read, read], "Read it."])
    with FakeMessagesApi("Bash", lambda body: next(replies)) as api:
        result = agent.claude(api, "read the notes")
        conversation = api.conversation()
    reads = tool_results(conversation[1])
    assert len(reads) == 3 and all("the notes" in result_text(b) for b in reads)
    warned = [b for b in reads if "[loopguard] Warning: Read was asked for 2 times" in str(b)]
    assert len(warned) >= 1  # the warning reached the model with the call's result
    assert result["permission_denials"] == [] and result["result"] == "Read it."
    assert agent.failures() == []


RETRY_RULES = """\
version: 1
keyword_sets: {build: [is the build green]}
intents:
  - id: build_status
    when: {text_contains: build}
    require: {tool: Bash, args: {command: {prefix: make test}}}
    reason: Only the test run can say.
"""


def test_the_projects_rules_send_the_model_back_for_the_required_tool(agent: Agent) -> None:
    """loopguard.yaml in the project folder is found; a Stop without the required call is
    blocked with the retry text, which the model sees; after the call the turn ends."""
    (agent.project / "loopguard.yaml").write_text(RETRY_RULES)
    replies = iter(
        [
            "It is probably green.",
            [("Bash", {"command": "make test || true", "description": "tests"})],
            "Tests ran.",
        ]
    )
    with FakeMessagesApi("Bash", lambda body: next(replies)) as api:
        result = agent.claude(api, "is the build green?")
        conversation = api.conversation()
    assert len(conversation) == 3
    retry = json.dumps(conversation[1]["messages"][-1])
    assert "Only the test run can say. Call the tool now: Bash(command=<text starting with" in retry
    assert result["result"] == "Tests ran." and result["terminal_reason"] == "completed"
    assert agent.failures() == []


def test_a_broken_rules_file_allows_the_calls_and_tells_the_user_once(agent: Agent) -> None:
    """The guard cannot load the project's rules: it never breaks the agent (every call runs),
    and the user is told once (Claude Code's systemMessage, a notice line in stream-json)."""
    (agent.project / "loopguard.yaml").write_text("version: 1\nloop_detection: [unclosed\n")
    log = agent.project / "runs.log"
    calls = iter([[failing_call(agent, log)]] * 4 + ["Gave up."])
    with FakeMessagesApi("Bash", lambda body: next(calls)) as api:
        lines = agent.stream(api, "list the build folder")
    assert log.read_text().split() == ["ran"] * 4  # unguarded, not blocked
    assert lines[-1]["type"] == "result" and lines[-1]["result"] == "Gave up."
    notices = [
        line["content"]
        for line in lines
        if line.get("type") == "system" and line.get("subtype") == "informational"
    ]
    # (a SessionStart hook's systemMessage is not shown in -p mode: only later events' are)
    assert len(notices) == 1 and "loopguard.yaml" in notices[0], notices
    assert any("loopguard.yaml" in line for line in agent.failures())
