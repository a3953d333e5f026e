"""Claude Agent SDK hooks: the callbacks driven directly, and end-to-end runs of the Claude
Code CLI shipped inside the `claude-agent-sdk` wheel against a local fake of the Anthropic
Messages API (no network, no real key). The frameworks are in the test extra: no skips."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    query,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "integrations"))
from fake_messages_api import FakeMessagesApi  # noqa: E402 — the example folder is on the path now

import loopguard  # noqa: E402
from loopguard.integrations.claude_agent_sdk import ClaudeLoopGuard, loopguard_hooks  # noqa: E402

pytestmark = pytest.mark.slow  # drives the Claude Agent SDK (and its CLI in a subprocess)

SID = "claude-session-1"


def hook(lg: ClaudeLoopGuard, event: str, **fields: Any) -> dict[str, Any]:
    callback = lg.hooks()[event][0].hooks[0]
    data = {
        "session_id": SID,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "hook_event_name": event,
        **fields,
    }
    return asyncio.run(callback(data, fields.get("tool_use_id"), {"signal": None}))  # type: ignore[arg-type]


def pre(lg: ClaudeLoopGuard, tool_use_id: str, command: str = "ls", **extra: Any) -> dict[str, Any]:
    return hook(
        lg,
        "PreToolUse",
        tool_name="Bash",
        tool_input={"command": command},
        tool_use_id=tool_use_id,
        **extra,
    )


def post(
    lg: ClaudeLoopGuard, tool_use_id: str, command: str = "ls", out: str = "a.txt", **extra: Any
) -> dict[str, Any]:
    return hook(
        lg,
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": command},
        tool_response={"stdout": out, "stderr": ""},
        tool_use_id=tool_use_id,
        **extra,
    )


def batch_end(lg: ClaudeLoopGuard) -> dict[str, Any]:
    return hook(lg, "PostToolBatch", tool_calls=[])


def one_call(lg: ClaudeLoopGuard, tool_use_id: str, command: str = "ls") -> dict[str, Any]:
    """A response with one call: PreToolUse, PostToolUse when allowed, PostToolBatch."""
    decision = pre(lg, tool_use_id, command)
    if not decision:
        post(lg, tool_use_id, command)
    batch_end(lg)
    return decision


def denial(out: dict[str, Any]) -> dict[str, Any]:
    specific = out["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreToolUse" and specific["permissionDecision"] == "deny"
    return json.loads(specific["permissionDecisionReason"])  # type: ignore[no-any-return]


def test_the_hooks_mapping_names_every_event() -> None:
    assert set(loopguard_hooks()) == {
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
        "PreCompact",
        "PostToolBatch",
    }


def test_a_loop_is_denied_then_stopped_with_continue_false() -> None:
    lg = ClaudeLoopGuard()
    hook(lg, "UserPromptSubmit", prompt="list the files")
    assert one_call(lg, "t1") == {} and one_call(lg, "t2") == {}
    third = one_call(lg, "t3")
    assert denial(third)["status"] == "blocked" and "continue_" not in third
    fourth = one_call(lg, "t4")
    assert denial(fourth)["status"] == "error"
    assert fourth["continue_"] is False
    assert fourth["stopReason"].startswith("[loopguard] Stopped: Bash was called 3 times")


def test_a_healthy_session_is_untouched() -> None:
    lg = ClaudeLoopGuard()
    assert hook(lg, "UserPromptSubmit", prompt="list then read") == {}
    for i, command in enumerate(["ls", "cat a.txt", "wc -l a.txt"]):
        assert pre(lg, f"t{i}", command) == {}
        assert post(lg, f"t{i}", command, out=f"out {i}") == {}
        assert batch_end(lg) == {}
    assert hook(lg, "Stop", stop_hook_active=False, last_assistant_message="done") == {}


def test_parallel_calls_one_blocked_the_rest_aborted() -> None:
    lg = ClaudeLoopGuard()
    hook(lg, "UserPromptSubmit", prompt="list the files")
    for i in range(3):
        one_call(lg, f"t{i}")
    answers = [pre(lg, "b1"), pre(lg, "b2", "rm -rf build"), pre(lg, "b3", "make")]
    assert [denial(a)["status"] for a in answers] == ["error", "aborted", "aborted"]
    assert all(a["continue_"] is False for a in answers)
    assert "tripped the loop breaker" in denial(answers[1])["message"]


def test_a_failing_tool_is_recorded_as_a_failure() -> None:
    lg = ClaudeLoopGuard()
    hook(lg, "UserPromptSubmit", prompt="build it")
    assert pre(lg, "t1", "make") == {}
    assert (
        hook(
            lg,
            "PostToolUseFailure",
            tool_name="Bash",
            tool_input={"command": "make"},
            tool_use_id="t1",
            error="exit status 2",
        )
        == {}
    )
    entry = lg.core.session(SID).history()[-1]
    assert entry.tool == "Bash" and (entry.outcome or b"").startswith(b"error:")


def test_a_required_tool_retry_blocks_the_stop() -> None:
    lg = ClaudeLoopGuard(
        loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]})
    )
    hook(lg, "UserPromptSubmit", prompt="帮我看看持仓")
    out = hook(lg, "Stop", stop_hook_active=False, last_assistant_message="计划：先读取持仓")
    assert out["decision"] == "block" and 'portfolio(mode="diagnose")' in out["reason"]
    assert (
        hook(
            lg,
            "PreToolUse",
            tool_name="portfolio",
            tool_input={"mode": "diagnose"},
            tool_use_id="p1",
        )
        == {}
    )
    hook(
        lg,
        "PostToolUse",
        tool_name="portfolio",
        tool_input={"mode": "diagnose"},
        tool_response="600000",
        tool_use_id="p1",
    )
    assert hook(lg, "Stop", stop_hook_active=True, last_assistant_message="整体健康。") == {}


def test_an_exhausted_retry_shows_the_warning_to_the_user() -> None:
    lg = ClaudeLoopGuard(
        loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]})
    )
    hook(lg, "UserPromptSubmit", prompt="帮我看看持仓")
    for _ in range(2):
        assert (
            hook(lg, "Stop", stop_hook_active=True, last_assistant_message="没问题。")["decision"]
            == "block"
        )
    last = hook(lg, "Stop", stop_hook_active=True, last_assistant_message="没问题。")
    assert "portfolio" in last["systemMessage"] and "没问题" not in last["systemMessage"]


def test_pre_compact_marks_the_session_compacted(monkeypatch: pytest.MonkeyPatch) -> None:
    compactions: list[str] = []
    original = loopguard.Session.compacted
    monkeypatch.setattr(
        loopguard.Session, "compacted", lambda s: (compactions.append(s.id), original(s))[1]
    )
    lg = ClaudeLoopGuard()
    assert hook(lg, "PreCompact", trigger="auto", custom_instructions=None) == {}
    assert compactions == [SID]


def test_a_sub_agent_call_is_scoped_by_its_agent_id() -> None:
    lg = ClaudeLoopGuard()
    hook(lg, "UserPromptSubmit", prompt="fan out")
    pre(lg, "s1", agent_id="sub-a")
    post(lg, "s1", agent_id="sub-a")
    assert [e.run_id for e in lg.core.session(SID).history()] == ["sub-a"]


# -- end to end: the real Claude Code CLI against a fake Messages API --------------------
def _options(lg: ClaudeLoopGuard, api: FakeMessagesApi, home: Path) -> ClaudeAgentOptions:
    env = {
        "ANTHROPIC_BASE_URL": api.url,
        "ANTHROPIC_API_KEY": "sk-ant-fake-offline",
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }
    return ClaudeAgentOptions(
        hooks=lg.hooks(),
        allowed_tools=["Bash"],
        env=env,
        cwd=str(home),
        max_turns=12,
        setting_sources=[],
        model="claude-sonnet-4-5",
    )


async def _run(lg: ClaudeLoopGuard, api: FakeMessagesApi, home: Path) -> list[Any]:
    return [
        message
        async for message in query(prompt="ping the server", options=_options(lg, api, home))
    ]


def test_the_claude_code_cli_is_stopped_by_the_hooks(tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    command = f"echo ran >> {log}; echo pong"

    def looping_model(body: dict[str, Any]) -> Any:
        return [("Bash", {"command": command, "description": "ping"})]

    lg = ClaudeLoopGuard()
    with FakeMessagesApi("Bash", looping_model) as api:
        messages = asyncio.run(asyncio.wait_for(_run(lg, api, tmp_path), 120))
        conversation = api.conversation()
    assert log.read_text().split() == [
        "ran",
        "ran",
    ]  # the third call was denied, the fourth stopped the CLI
    assert len(conversation) == 4  # the model was not asked again after the breaker
    last_results = [
        block
        for block in conversation[-1]["messages"][-1]["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    assert "[loopguard] Blocked: Bash was called 3 times" in json.dumps(last_results)
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    sid = result.session_id
    history = lg.core.session(sid).history()
    assert [e.tool for e in history] == ["Bash"] * 4 and lg.core.session(sid).tools_closed
    assert os.environ.get("ANTHROPIC_BASE_URL") is None  # the fake was only ever given to the CLI


def test_the_cli_gets_one_blocked_call_and_the_rest_aborted(tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    loop = ("Bash", {"command": f"echo ran >> {log}; echo pong", "description": "ping"})
    others = [
        ("Bash", {"command": f"echo {word} >> {log}", "description": word})
        for word in ("two", "three")
    ]
    rounds = iter([[loop]] * 3 + [[loop, *others]])

    lg = ClaudeLoopGuard()
    with FakeMessagesApi("Bash", lambda body: next(rounds)) as api:
        messages = asyncio.run(asyncio.wait_for(_run(lg, api, tmp_path), 120))
        assert len(api.conversation()) == 4
    assert log.read_text().split() == ["ran", "ran"]  # neither of the aborted calls ran
    results = {
        block.tool_use_id: block.content
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for block in m.content
        if isinstance(block, ToolResultBlock)
    }
    asked = [
        block.id
        for m in messages
        if isinstance(m, AssistantMessage)
        for block in m.content
        if isinstance(block, ToolUseBlock)
    ]
    assert sorted(results) == sorted(asked)  # every call answered
    last_round = [str(results[i]) for i in asked[-3:]]
    assert [
        '"status": "error"' in last_round[0],
        '"status": "aborted"' in last_round[1],
        '"status": "aborted"' in last_round[2],
    ] == [True, True, True]


def test_the_cli_is_sent_back_for_the_required_tool(tmp_path: Path) -> None:
    rules = {
        "version": 1,
        "keyword_sets": {"build": ["is the build green"]},
        "intents": [
            {
                "id": "build_status",
                "when": {"text_contains": "build"},
                "require": {"tool": "Bash", "args": {"command": {"prefix": "make test"}}},
                "reason": "Only the test run can say.",
            }
        ],
    }
    replies = iter(
        [
            "It is probably green.",
            [("Bash", {"command": "make test || true", "description": "tests"})],
            "Tests ran.",
        ]
    )
    lg = ClaudeLoopGuard(loopguard.Guard.from_dict(rules))
    with FakeMessagesApi("Bash", lambda body: next(replies)) as api:
        options = _options(lg, api, tmp_path)
        messages = asyncio.run(
            asyncio.wait_for(_collect(query(prompt="is the build green?", options=options)), 120)
        )
        conversation = api.conversation()
    assert len(conversation) == 3
    retry = json.dumps(conversation[1]["messages"][-1])
    assert "Only the test run can say. Call the tool now: Bash(command=<text starting with" in retry
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "Tests ran."


async def _collect(stream: Any) -> list[Any]:
    return [message async for message in stream]
