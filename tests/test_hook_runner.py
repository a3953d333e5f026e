"""`loopguard hook DIALECT` in process: each agent's real payloads in, the agent's answer out.

The payloads are the ones the real CLIs sent (tests/hook_samples/, see its README),
with ids and commands varied per call. Every test runs with its own state and cache folder.
"""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from loopguard.hooks import guardcache, journal, paths, runner
from loopguard.hooks.dialects import DIALECTS

SAMPLES = Path(__file__).parent / "hook_samples"
REQUIRED_TOOL_RULES = """\
version: 1
keyword_sets:
  build: ["is the build green"]
intents:
  - id: build_status
    when: {text_contains: build}
    require: {tool: Bash, args: {command: {prefix: "make test"}}}
    reason: Only the test run can say.
"""


@pytest.fixture(autouse=True)
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name in ("LOOPGUARD_RULES", "LOOPGUARD_STORE", *paths.PROJECT_ENVS):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def sample(agent: str, name: str, **changes: Any) -> dict[str, Any]:
    payload = json.loads((SAMPLES / agent / f"{name}.json").read_text(encoding="utf-8"))
    payload.update(changes)
    return payload


def run(argv: list[str], payload: Any) -> tuple[int, Any]:
    """The hook's exit code and its stdout parsed as JSON (None when it printed nothing)."""
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    out = io.StringIO()
    code = runner.main(argv, stdin=io.BytesIO(raw), stdout=out)
    text = out.getvalue().strip()
    return code, json.loads(text) if text else None


def hook(dialect: str, payload: Any, *extra: str) -> Any:
    code, answer = run([dialect, *extra], payload)
    assert code == 0
    return answer


def logged(session: str) -> list[str]:
    """The actions the decision log holds for `session` (the journal closed again)."""
    if not paths.database().exists():
        return []
    book = journal.Journal(paths.database())
    try:
        return [row.action for row in book.rows(session)]
    finally:
        book.close()


def log_lines() -> list[str]:
    path = paths.log_file()
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


# -- Claude Code ------------------------------------------------------------------------
def claude_failing_call(n: int, session: str = "s-claude", *extra: str) -> tuple[Any, Any]:
    """(pre answer, post answer) of the n-th run of the same failing Bash call."""
    args = {"command": "ls /nonexistent-dir-xyz", "description": "list missing"}
    pre = hook(
        "claude",
        sample("claude", "PreToolUse", session_id=session, tool_use_id=f"t{n}", tool_input=args),
        *extra,
    )
    if pre.get("hookSpecificOutput"):
        return pre, None
    failure = sample(
        "claude", "PostToolUseFailure", session_id=session, tool_use_id=f"t{n}", tool_input=args
    )
    post = hook("claude", failure, *extra)
    hook("claude", sample("claude", "PostToolBatch", session_id=session), *extra)
    return pre, post


def test_claude_the_third_identical_failing_call_is_denied_then_the_turn_ends() -> None:
    hook("claude", sample("claude", "UserPromptSubmit", session_id="s-claude"))
    assert claude_failing_call(1) == ({}, {})
    assert claude_failing_call(2) == ({}, {})
    third, _ = claude_failing_call(3)
    decision = third["hookSpecificOutput"]
    assert decision["hookEventName"] == "PreToolUse"
    assert decision["permissionDecision"] == "deny"
    reason = json.loads(decision["permissionDecisionReason"])
    assert reason["status"] == "blocked" and reason["detector"] == "doom_loop_exact"
    assert "continue" not in third
    fourth, _ = claude_failing_call(4)
    assert fourth["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert fourth["continue"] is False and "[loopguard] Stopped" in fourth["stopReason"]


def test_claude_a_parallel_batch_of_different_reads_is_no_loop() -> None:
    hook("claude", sample("claude", "UserPromptSubmit", session_id="s-par"))
    for response in range(3):
        ids = [f"r{response}-{i}" for i in range(4)]
        for i, call_id in enumerate(ids):
            pre = sample(
                "claude",
                "PreToolUse",
                session_id="s-par",
                tool_name="Read",
                tool_use_id=call_id,
                tool_input={"file_path": f"/src/file{response}{i}.py"},
            )
            assert hook("claude", pre) == {}
        for i, call_id in enumerate(ids):
            post = sample(
                "claude",
                "PostToolUse-Read",
                session_id="s-par",
                tool_use_id=call_id,
                tool_input={"file_path": f"/src/file{response}{i}.py"},
            )
            assert hook("claude", post) == {}
        assert hook("claude", sample("claude", "PostToolBatch", session_id="s-par")) == {}


def test_claude_a_warning_before_a_call_is_shown_with_its_result() -> None:
    hook("claude", sample("claude", "UserPromptSubmit", session_id="s-warn"))
    args = {"file_path": "/same.txt"}
    answers = []
    for i in range(3):  # three identical reads in one response: a duplicate, warned
        pre = sample(
            "claude",
            "PreToolUse",
            session_id="s-warn",
            tool_name="Read",
            tool_use_id=f"w{i}",
            tool_input=args,
        )
        answers.append(hook("claude", pre))
    assert all(a == {} or "permissionDecision" not in str(a) for a in answers)
    posts = [
        hook(
            "claude",
            sample(
                "claude",
                "PostToolUse-Read",
                session_id="s-warn",
                tool_use_id=f"w{i}",
                tool_input=args,
            ),
        )
        for i in range(3)
    ]
    notes = [p["hookSpecificOutput"]["additionalContext"] for p in posts if p]
    assert notes and all("[loopguard]" in note for note in notes)
    assert all(p["hookSpecificOutput"]["hookEventName"] == "PostToolUse" for p in posts if p)


def test_claude_a_stop_without_the_required_tool_sends_the_model_back(folders: Path) -> None:
    rules = folders / "loopguard.yaml"
    rules.write_text(REQUIRED_TOOL_RULES, encoding="utf-8")
    prompt = sample("claude", "UserPromptSubmit", session_id="s-req", prompt="is the build green?")
    assert hook("claude", prompt, "--rules", str(rules)) == {}
    stop = sample("claude", "Stop", session_id="s-req", last_assistant_message="Probably green.")
    answer = hook("claude", stop, "--rules", str(rules))
    assert answer["decision"] == "block" and "make test" in answer["reason"]


def test_claude_a_compaction_is_seen_and_a_sub_agent_is_a_session_of_its_own() -> None:
    assert hook("claude", sample("claude", "PreCompact")) == {}
    session = sample("claude", "PreCompact")["session_id"]
    book = journal.Journal(paths.database())
    assert [row.action for row in book.rows(session)] == ["compacted"]
    pre = sample("claude", "PreToolUse-subagent")
    assert hook("claude", pre) == {}
    keys = {key for key, _, _ in book.sessions()}
    assert f"{pre['session_id']}/{pre['agent_id']}" in keys
    book.close()
    # a compaction's SubagentStop (empty agent_type) is not a sub-agent's stop
    assert hook("claude", sample("claude", "SubagentStop-compaction")) == {}


def test_claude_session_end_keeps_the_state_for_a_resume() -> None:
    for n in (1, 2):
        claude_failing_call(n, "s-end")
    assert hook("claude", sample("claude", "SessionEnd", session_id="s-end")) == {}
    db = sqlite3.connect(paths.database())
    assert db.execute("SELECT count(*) FROM loopguard_sessions WHERE key = 's-end'").fetchone()[0]
    db.close()
    # `claude -p --resume` goes on with the same session id: the loop is still seen
    third, _ = claude_failing_call(3, "s-end")
    assert third["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_rules_problems_wait_for_an_event_the_agent_shows(folders: Path) -> None:
    rules = folders / "broken.yaml"
    rules.write_text("version: 1\ndetectors:\n  doom_loop_exact: {window: -3}\n", encoding="utf-8")
    start = sample("claude", "SessionStart", session_id="s-show")
    assert hook("claude", start, "--rules", str(rules)) == {}  # not shown there
    prompt = sample("claude", "UserPromptSubmit", session_id="s-show")
    assert "not guarded" in hook("claude", prompt, "--rules", str(rules))["systemMessage"]


# -- Codex CLI ----------------------------------------------------------------------------
def test_codex_denies_without_continue_and_closes_the_turn_after_a_breaker() -> None:
    hook("codex", sample("codex", "UserPromptSubmit"))
    answers = []
    for n in range(5):
        pre = sample("codex", "PreToolUse", tool_use_id=f"c{n}", tool_input={"command": "cat x"})
        answer = hook("codex", pre)
        answers.append(answer)
        if not answer:
            post = sample(
                "codex", "PostToolUse-failed", tool_use_id=f"c{n}", tool_input={"command": "cat x"}
            )
            hook("codex", post)
    assert answers[:2] == [{}, {}]
    for answer in answers[2:]:
        assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert "continue" not in answer and "stopReason" not in answer
    # after the breaker, a different call of the same turn is denied too
    other = sample("codex", "PreToolUse", tool_use_id="c9", tool_input={"command": "ls"})
    assert hook("codex", other)["hookSpecificOutput"]["permissionDecision"] == "deny"
    # ... and the next user turn starts open again
    hook("codex", sample("codex", "UserPromptSubmit"))
    assert hook("codex", sample("codex", "PreToolUse", tool_use_id="c10")) == {}


# -- Gemini CLI ---------------------------------------------------------------------------
def gemini_failing_round(n: int) -> Any:
    hook("gemini", sample("gemini", "BeforeToolSelection"))
    pre = hook("gemini", sample("gemini", "BeforeTool", tool_input={"command": "cat missing.txt"}))
    if pre:
        return pre
    failed = sample("gemini", "AfterTool-failed", tool_input={"command": "cat missing.txt"})
    text = failed["tool_response"]["llmContent"]
    failed["tool_response"]["llmContent"] = text.replace("PGID: ", f"PGID: {4000 + n}")
    assert hook("gemini", failed) == {}
    return pre


def test_gemini_a_repeated_failing_shell_call_is_denied_at_the_third_then_stops() -> None:
    hook("gemini", sample("gemini", "BeforeAgent"))
    assert [gemini_failing_round(n) for n in (1, 2)] == [{}, {}]
    third = gemini_failing_round(3)
    assert third["decision"] == "deny" and '"blocked"' in third["reason"]
    fourth = gemini_failing_round(4)
    assert fourth["decision"] == "deny" and fourth["continue"] is False


def test_gemini_precompress_before_every_model_call_is_not_a_compaction() -> None:
    assert hook("gemini", sample("gemini", "PreCompress", trigger="auto")) == {}
    session = sample("gemini", "PreCompress")["session_id"]
    assert logged(session) == []
    assert hook("gemini", sample("gemini", "PreCompress", trigger="manual")) == {}
    book = journal.Journal(paths.database())
    assert [row.action for row in book.rows(session)] == ["compacted"]
    book.close()


# -- Copilot and Cursor (payloads built from their published hook references) ---------------
def copilot_pre(n: int, command: str = "make build") -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "session_id": "s-copilot",
        "timestamp": "2026-12-01T10:00:00Z",
        "cwd": "/",
        "tool_name": "bash",
        "tool_input": {"command": command},
    }


def copilot_post(command: str = "make build") -> dict[str, Any]:
    return {
        "hook_event_name": "PostToolUse",
        "session_id": "s-copilot",
        "timestamp": "2026-12-01T10:00:01Z",
        "cwd": "/",
        "tool_name": "bash",
        "tool_input": {"command": command},
        "tool_result": {"result_type": "failure", "text_result_for_llm": "make: *** Error 2"},
    }


def test_copilot_denies_in_both_shapes_and_interrupts_after_a_breaker() -> None:
    permission = {"sessionId": "s-copilot", "timestamp": 1, "cwd": "/", "toolName": "bash"}
    args = ["copilot", "--event", "permissionRequest"]
    assert hook(*args[:1], permission, *args[1:]) == {}
    answers = []
    for n in range(4):
        answer = hook("copilot", copilot_pre(n))
        answers.append(answer)
        if not answer:
            hook("copilot", copilot_post())
    assert answers[:2] == [{}, {}]
    third = answers[2]
    assert (
        third["permissionDecision"] == "deny" and '"blocked"' in third["permissionDecisionReason"]
    )
    assert third["hookSpecificOutput"]["permissionDecision"] == "deny"
    stopped = hook(*args[:1], permission, *args[1:])
    assert stopped["behavior"] == "deny" and stopped["interrupt"] is True


def test_copilot_a_denied_call_reported_back_is_not_recorded() -> None:
    denied = copilot_post()
    denied["tool_result"] = {"result_type": "denied", "text_result_for_llm": "denied"}
    assert hook("copilot", denied) == {}
    assert logged("s-copilot") == []


def test_cursor_denies_with_agent_and_user_messages() -> None:
    def event(name: str, n: int, **extra: Any) -> dict[str, Any]:
        return {
            "hook_event_name": name,
            "conversation_id": "s-cursor",
            "generation_id": f"g{n}",
            "workspace_roots": ["/"],
            "tool_name": "Shell",
            "tool_input": {"command": "npm test"},
            **extra,
        }

    answers = []
    for n in range(3):
        answer = hook("cursor", event("preToolUse", n))
        answers.append(answer)
        if not answer:
            hook("cursor", event("postToolUseFailure", n, error_message="exit 1: 3 failing"))
    assert answers[:2] == [{}, {}]
    assert answers[2]["permission"] == "deny"
    assert '"blocked"' in answers[2]["agent_message"] and answers[2]["user_message"]


# -- never break the agent -----------------------------------------------------------------
@pytest.mark.parametrize(
    "stdin",
    [b"", b"not json", b"[1, 2]", b'{"hook_event_name": "PreToolUse"}', b"\xff\xfe{", b'"x"'],
    ids=["empty", "garbage", "array", "no-session", "bad-utf8", "string"],
)
def test_unreadable_events_are_allowed_with_a_reason(
    stdin: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    code, answer = run(["claude"], stdin)
    assert code == 0 and answer == {}
    err = capsys.readouterr().err
    assert "the call is allowed" in err and "Traceback" not in err
    assert len(log_lines()) == 1


def test_an_unknown_event_is_answered_with_nothing() -> None:
    assert hook("claude", {"hook_event_name": "Notification", "session_id": "s"}) == {}
    assert log_lines() == []


def test_an_event_larger_than_the_limit_is_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "MAX_EVENT_BYTES", 100)
    payload = sample("claude", "PostToolUse", tool_response={"stdout": "x" * 500})
    code, answer = run(["claude"], payload)
    assert (code, answer) == (0, {})
    assert "larger than" in log_lines()[0]


def test_a_broken_rules_file_allows_every_call_and_tells_the_user_once(folders: Path) -> None:
    rules = folders / "broken.yaml"
    rules.write_text("version: 1\ndetectors:\n  doom_loop_exact: {window: -3}\n", encoding="utf-8")
    seen = []
    for n in range(4):
        pre = sample("claude", "PreToolUse", session_id="s-broken", tool_use_id=f"b{n}")
        seen.append(hook("claude", pre, "--rules", str(rules)))
    assert "systemMessage" in seen[0] and str(rules) in seen[0]["systemMessage"]
    assert "not guarded" in seen[0]["systemMessage"] and ":3:" in seen[0]["systemMessage"]
    assert seen[1:] == [{}, {}, {}]  # once per session; calls allowed


def test_a_rules_file_with_lint_errors_still_guards_and_says_so(folders: Path) -> None:
    rules = folders / "repaired.yaml"
    rules.write_text(  # loads (the engine repairs it) but a threshold can never fire
        "version: 1\nloop_detection:\n  history_size: 10\n  warning_threshold: 12\n"
        "  critical_threshold: 13\n  global_circuit_breaker_threshold: 14\n",
        encoding="utf-8",
    )
    first = hook(
        "claude", sample("claude", "PreToolUse", session_id="s-lint"), "--rules", str(rules)
    )
    assert "have errors" in first["systemMessage"] and "never be reached" in first["systemMessage"]
    assert not first.get("hookSpecificOutput")  # guarded: the call itself is allowed
    answers = [claude_failing_call(n, "s-lint-2", "--rules", str(rules))[0] for n in (1, 2, 3)]
    assert "systemMessage" in answers[0] and not answers[0].get("hookSpecificOutput")
    assert answers[1] == {}  # told once per session
    assert answers[2]["hookSpecificOutput"]["permissionDecision"] == "deny"  # still guarded


def test_a_damaged_state_file_allows_the_call(capsys: pytest.CaptureFixture[str]) -> None:
    paths.state_dir().mkdir(parents=True)
    paths.database().write_bytes(b"this is not a SQLite database" * 100)
    code, answer = run(["claude"], sample("claude", "PreToolUse"))
    assert (code, answer) == (0, {})
    assert "the call is allowed" in capsys.readouterr().err
    assert "DatabaseError" in log_lines()[0]


def test_a_bug_inside_the_guard_allows_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(runner, "_apply", broken)
    code, answer = run(["claude"], sample("claude", "PreToolUse"))
    assert (code, answer) == (0, {})
    assert "RuntimeError: a bug" in log_lines()[0]


def test_usage_errors_exit_1_never_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert runner.main(["claude", "--bogus"], stdin=io.BytesIO(b"{}"), stdout=io.StringIO()) == 1
    assert runner.main([], stdin=io.BytesIO(b"{}"), stdout=io.StringIO()) == 1
    assert "usage: loopguard hook" in capsys.readouterr().err


# -- rules and store ------------------------------------------------------------------------
def test_rules_are_found_in_the_project_folder(
    folders: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = folders / "project"
    project.mkdir()
    (project / ".loopguard.yaml").write_text(REQUIRED_TOOL_RULES, encoding="utf-8")
    prompt = sample("claude", "UserPromptSubmit", session_id="s-proj", prompt="is the build green?")
    stop = sample("claude", "Stop", session_id="s-proj", last_assistant_message="fine")
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    hook("claude", prompt)
    assert hook("claude", stop)["decision"] == "block"
    # the event's own cwd finds it too; LOOPGUARD_RULES overrides it
    monkeypatch.delenv("CLAUDE_PROJECT_DIR")
    hook("claude", {**prompt, "cwd": str(project), "session_id": "s-cwd"})
    assert (
        hook("claude", {**stop, "cwd": str(project), "session_id": "s-cwd"})["decision"] == "block"
    )
    monkeypatch.setenv("LOOPGUARD_RULES", "builtin:default")
    hook("claude", {**prompt, "cwd": str(project), "session_id": "s-env"})
    assert hook("claude", {**stop, "cwd": str(project), "session_id": "s-env"}) == {}


def test_loopguard_store_names_another_state_file(
    folders: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = folders / "elsewhere.db"
    monkeypatch.setenv("LOOPGUARD_STORE", str(other))
    claude_failing_call(1, "s-store")
    db = sqlite3.connect(other)
    assert db.execute("SELECT count(*) FROM loopguard_sessions").fetchone()[0] == 1
    db.close()


# -- the start-up cache ----------------------------------------------------------------------
def fresh_build(rules: str) -> guardcache.Built:
    """What a new hook process builds (nothing remembered in this one)."""
    guardcache._memo.clear()
    return guardcache.build(rules, paths.cache_dir(), runner._make_store)


def test_the_cache_is_used_and_a_changed_rules_file_is_never_missed(folders: Path) -> None:
    rules = folders / "rules.yaml"
    rules.write_text("version: 1\n", encoding="utf-8")
    first = fresh_build(str(rules))
    second = fresh_build(str(rules))
    assert (first.cached, second.cached) == (False, True)
    assert second.guard is not None and second.problems == ()
    rules.write_text("version: 1\ndetectors:\n  doom_loop_exact: {window: -3}\n", encoding="utf-8")
    third = fresh_build(str(rules))
    assert not third.cached and third.guard is None and third.problems
    fourth = fresh_build(str(rules))
    assert fourth.cached and fourth.guard is None  # the failure is cached too, until a change


def test_a_newly_installed_plugin_makes_the_cache_stale(
    folders: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = folders / "site-packages"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))  # sys.path[0]: the fingerprint skips it
    monkeypatch.setattr("sys.path", ["<script>", *__import__("sys").path])
    assert not fresh_build("builtin:default").cached
    assert fresh_build("builtin:default").cached
    (site / "new_plugin-1.0.dist-info").mkdir()  # what installing a distribution does
    assert not fresh_build("builtin:default").cached


def test_a_damaged_cache_entry_is_rebuilt(folders: Path) -> None:
    fresh_build("builtin:default")
    for entry in paths.cache_dir().iterdir():
        entry.write_text('{"format": 1, "problems": "x"', encoding="utf-8")
    built = fresh_build("builtin:default")
    assert not built.cached and built.guard is not None


# -- status -----------------------------------------------------------------------------------
def test_status_names_the_denied_call_and_its_detector(capsys: pytest.CaptureFixture[str]) -> None:
    from loopguard.cli import main

    for n in (1, 2, 3):
        claude_failing_call(n, "s-status-0123")
    capsys.readouterr()
    assert main(["hook", "status"]) == 0
    listing = capsys.readouterr().out
    assert "s-status-0123" in listing and "1 stops" in listing
    assert main(["hook", "status", "s-status"]) == 0  # the start of the id is enough
    text = capsys.readouterr().out
    assert "critical" in text and "doom_loop_exact" in text and "[loopguard] Blocked" in text
    assert main(["hook", "status", "s-status-0123", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["decisions"]
    assert rows[-1]["decision"] == "critical" and rows[-1]["detector"] == "doom_loop_exact"
    assert main(["hook", "status", "nope"]) == 1


def test_every_dialect_answers_an_allowed_call_with_an_empty_object() -> None:
    for name in DIALECTS:
        pre = {
            "hook_event_name": {"gemini": "BeforeTool", "cursor": "preToolUse"}.get(
                name, "PreToolUse"
            ),
            "session_id": f"s-{name}",
            "conversation_id": f"s-{name}",
            "tool_name": "Read",
            "tool_input": {"path": "/a"},
        }
        assert hook(name, pre) == {}


def test_a_misspelt_dialect_exits_1_not_the_blocking_2(capsys: pytest.CaptureFixture[str]) -> None:
    from loopguard.cli import HOOK_DIALECTS, main

    assert main(["hook", "claud"]) == 1
    assert "unknown dialect 'claud'" in capsys.readouterr().err
    assert set(HOOK_DIALECTS) == set(DIALECTS)  # the CLI's fast-path list is the dialects'
