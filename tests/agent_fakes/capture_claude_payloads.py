"""Regenerate tests/hook_samples/claude/: run the Claude Code CLI bundled in the
claude-agent-sdk wheel offline against examples/integrations/fake_messages_api.py, with this
script as the command hook of every event, and write one JSON file per event kind (the stdin
payload as the CLI sent it, the temp folder replaced by `<tmp>`).

    python tests/agent_fakes/capture_claude_payloads.py [OUT_DIR]

Sessions: a failing Bash call, a succeeding one, a Read and a Bash call in one response, a text
answer; a response whose calls the hook denies (JSON deny, exit 2, exit 1, plain text); a Stop
the hook blocks once; an Agent call whose sub-agent runs Bash; `/compact` on a resumed session.
Run as `… hook CAPTURES PLAN` the script is the hook: it appends its event to CAPTURES and
answers as PLAN (a JSON file: "Event" or "Event:command" -> {stdout, exit, stderr, times}) says.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "hook_samples" / "claude"
EVENTS = (
    "SessionStart SessionEnd UserPromptSubmit PreToolUse PostToolUse PostToolUseFailure "
    "PostToolBatch Stop StopFailure SubagentStart SubagentStop PreCompact PostCompact "
    "Notification PermissionRequest PermissionDenied MessageDisplay"
).split()


# -- the hook ------------------------------------------------------------------------------
def hook(captures: str, plan_file: str) -> int:
    event = json.loads(sys.stdin.read())
    with open(captures, "a", encoding="utf-8") as out:
        out.write(json.dumps(event) + "\n")
    plan = json.loads(Path(plan_file).read_text()) if os.path.exists(plan_file) else {}
    name = event.get("hook_event_name", "")
    command = (event.get("tool_input") or {}).get("command", "")
    rule = plan.get(f"{name}:{command}") or plan.get(name)
    if not rule:
        return 0
    if "times" in rule:  # answer only the first `times` events of this kind
        with open(f"{captures}.{name}.count", "a+", encoding="utf-8") as count:
            fcntl.flock(count, fcntl.LOCK_EX)
            count.seek(0)
            seen = len(count.read())
            count.write("x")
        if seen >= rule["times"]:
            return 0
    if "stdout" in rule:
        out_text = rule["stdout"]
        print(out_text if isinstance(out_text, str) else json.dumps(out_text))
    if rule.get("stderr"):
        print(rule["stderr"], file=sys.stderr)
    return int(rule.get("exit", 0))


# -- the sessions --------------------------------------------------------------------------
class Run:
    """One project folder and home; `claude()` runs one `claude -p` there."""

    def __init__(self, root: Path, plan: dict[str, Any] | None = None) -> None:
        self.root, self.project, self.home = root, root / "proj", root / "home"
        self.captures = root / "captures.jsonl"
        (self.project / ".claude").mkdir(parents=True)
        self.home.mkdir()
        (self.project / "a.txt").write_text("alpha\n")
        (self.project / "b.txt").write_text("beta\n")
        plan_file = root / "plan.json"
        plan_file.write_text(json.dumps(plan or {}))
        self.command = (
            f"{sys.executable} {Path(__file__).resolve()} hook {self.captures} {plan_file}"
        )
        entry = {"type": "command", "command": self.command}
        hooks = {name: [{"matcher": "*", "hooks": [entry]}] for name in EVENTS}
        (self.project / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))

    def claude(self, reply: Callable[[dict[str, Any]], Any], prompt: str, *extra: str) -> None:
        import claude_agent_sdk
        from fake_messages_api import FakeMessagesApi

        cli = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
        with FakeMessagesApi("Bash", reply) as api:
            env = {
                "PATH": os.environ.get("PATH", ""),
                "HOME": str(self.home),
                "CLAUDE_CONFIG_DIR": str(self.home),
                "ANTHROPIC_BASE_URL": api.url,
                "ANTHROPIC_API_KEY": "sk-ant-fake-offline",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1",
                "DISABLE_ERROR_REPORTING": "1",
            }
            args = [str(cli), "-p", prompt, "--allowedTools", "Bash", "Read", "--max-turns", "8"]
            args += ["--model", "claude-sonnet-4-5", "--output-format", "json"]
            args += ["--setting-sources", "project", *extra]
            subprocess.run(args, cwd=self.project, env=env, check=True, capture_output=True)

    def events(self) -> list[dict[str, Any]]:
        text = self.captures.read_text() if self.captures.exists() else ""
        return [json.loads(line) for line in text.splitlines()]

    def pick(self, name: str, nth: int = 0, **match: Any) -> dict[str, Any]:
        """The `nth` captured `name` event whose fields equal `match`, with `<tmp>` paths."""
        found = [
            e
            for e in self.events()
            if e["hook_event_name"] == name and all(e.get(k) == v for k, v in match.items())
        ]
        text = json.dumps(found[nth])
        text = text.replace(self.command, "python3 <tmp>/hook.py")
        text = text.replace(str(self.root), "<tmp>")
        text = text.replace(re.sub("[^A-Za-z0-9]", "-", str(self.root)), "-<tmp>")
        return json.loads(text)  # type: ignore[no-any-return]


def scripted(*turns: Any) -> Callable[[dict[str, Any]], Any]:
    answers = iter(turns)
    return lambda body: next(answers, "done")


def bash(command: str) -> tuple[str, dict[str, Any]]:
    return ("Bash", {"command": command, "description": command.split()[0]})


def sessions(tmp: Path) -> dict[str, dict[str, Any]]:
    """Every fixture: file name -> payload."""
    out: dict[str, dict[str, Any]] = {}

    basic = Run(tmp / "basic")
    read_a = ("Read", {"file_path": str(basic.project / "a.txt")})
    basic.claude(
        scripted(
            [bash("ls /nonexistent-dir-xyz")],
            [bash("echo hello")],
            [read_a, bash("cat b.txt")],
            "All done.",
        ),
        "do the task",
    )
    for name in ("SessionStart", "UserPromptSubmit", "PostToolUseFailure"):
        out[name] = basic.pick(name)
    out["PreToolUse"] = basic.pick("PreToolUse", tool_use_id="toolu_1_0")
    out["PostToolUse"] = basic.pick("PostToolUse", tool_use_id="toolu_2_0")
    out["PostToolUse-Read"] = basic.pick("PostToolUse", tool_name="Read")
    out["PostToolBatch"] = basic.pick("PostToolBatch", nth=2)
    for name in ("MessageDisplay", "Stop", "SessionEnd"):
        out[name] = basic.pick(name)

    deny = {"permissionDecision": "deny", "permissionDecisionReason": "REASON-FROM-HOOK"}
    denied = Run(
        tmp / "deny",
        {
            "PreToolUse:echo deny-json": {
                "stdout": {"hookSpecificOutput": {"hookEventName": "PreToolUse", **deny}}
            },
            "PreToolUse:echo exit2": {"exit": 2, "stderr": "STDERR-EXIT2"},
            "PreToolUse:echo exit1": {"exit": 1, "stderr": "STDERR-EXIT1"},
            "PreToolUse:echo plainout": {"stdout": "just some text"},
        },
    )
    calls = [bash(f"echo {w}") for w in ("deny-json", "exit2", "exit1", "plainout")]
    denied.claude(scripted(calls, "ok"), "do the task")
    out["PostToolBatch-denied"] = denied.pick("PostToolBatch")

    block = {"times": 1, "stdout": {"decision": "block", "reason": "STOP-BLOCK-REASON"}}
    blocked = Run(tmp / "stop", {"Stop": block})
    blocked.claude(scripted("first answer", "second answer"), "do the task")
    out["Stop-hook-active"] = blocked.pick("Stop", stop_hook_active=True)

    sub = Run(tmp / "subagent")
    main_turns = iter(
        [
            [
                (
                    "Agent",
                    {
                        "description": "sub task",
                        "prompt": "SUBTASK: run echo",
                        "subagent_type": "general-purpose",
                        "run_in_background": False,
                    },
                )
            ],
            "main done",
        ]
    )
    sub_turns = iter([[bash("echo from-sub")], "sub done"])

    def two_agents(body: dict[str, Any]) -> Any:
        # the sub-agent is not offered ScheduleWakeup; the main agent is
        tools = {t.get("name") for t in body.get("tools") or []}
        return next(main_turns if "ScheduleWakeup" in tools else sub_turns, "done")

    sub.claude(two_agents, "delegate the task")
    out["SubagentStart"] = sub.pick("SubagentStart")
    out["PreToolUse-subagent"] = sub.pick("PreToolUse", tool_name="Bash")
    out["PostToolBatch-subagent"] = sub.pick("PostToolBatch")
    out["SubagentStop"] = sub.pick("SubagentStop")

    compact = Run(tmp / "compact")
    compact.claude(scripted([bash("echo one")], "first done"), "step one")
    session = compact.pick("SessionStart")["session_id"]
    summary = "<summary>the summary</summary>"
    compact.claude(scripted(summary), "/compact keep the bash bits", "--resume", session)
    out["PreCompact"] = compact.pick("PreCompact")
    out["PostCompact"] = compact.pick("PostCompact")
    out["SubagentStop-compaction"] = compact.pick("SubagentStop")
    out["SessionStart-compact"] = compact.pick("SessionStart", source="compact")
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["hook"]:
        return hook(argv[1], argv[2])
    sys.path.insert(0, str(REPO / "examples" / "integrations"))
    target = Path(argv[0]) if argv else OUT
    tmp = Path(tempfile.mkdtemp(prefix="claude-capture-"))
    try:
        fixtures = sessions(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    target.mkdir(parents=True, exist_ok=True)
    for name, payload in fixtures.items():
        text = json.dumps(payload, indent=2, ensure_ascii=False)
        assert str(tmp) not in text and str(REPO) not in text and sys.prefix not in text, name
        (target / f"{name}.json").write_text(text + "\n")
        print(f"wrote {target / name}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
