"""`loopguard hook` as the agents run it: a new process per event, with and without the server.

These start real processes: the installed `loopguard` command, the hook server it starts
in the background, many hook processes at once on one session.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from helpers import server_pids, stop_servers

pytestmark = pytest.mark.slow  # every test starts hook processes

LOOPGUARD = [sys.executable, "-m", "loopguard"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    base = dict(os.environ)
    for name in ("LOOPGUARD_RULES", "LOOPGUARD_STORE", "CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"):
        base.pop(name, None)
    run = Path(f"/tmp/lg-{os.getpid()}-{tmp_path.name[-12:]}")  # short: a Unix socket's path
    base.update(
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        XDG_RUNTIME_DIR=str(run),
        LOOPGUARD_HOOK_SERVER="off",
        LOOPGUARD_HOOK_SERVER_IDLE="15",
    )
    yield base
    stop_servers(run)


def event(name: str, n: int, session: str = "s-proc", **extra: Any) -> bytes:
    body = {
        "session_id": session,
        "hook_event_name": name,
        "cwd": "/",
        "tool_name": "Bash",
        "tool_input": {"command": f"echo {n}"},
        "tool_use_id": f"toolu_{n}",
        **extra,
    }
    return json.dumps(body).encode()


def hook(payload: bytes, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*LOOPGUARD, "hook", "claude", *extra],
        input=payload,
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )


def sockets(env: dict[str, str]) -> list[Path]:
    return list(Path(env["XDG_RUNTIME_DIR"]).glob("loopguard/hook-*.sock"))


def wait_for(predicate: Any, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def history_rows(env: dict[str, str], session: str) -> list[tuple[str, str]]:
    db = sqlite3.connect(Path(env["XDG_STATE_HOME"]) / "loopguard" / "hooks.db")
    try:
        return db.execute(
            "SELECT event, action FROM loopguard_hook_log WHERE key = ? ORDER BY id", (session,)
        ).fetchall()
    finally:
        db.close()


@pytest.mark.parametrize("server", ["off", "on"])
def test_many_hook_processes_at_once_lose_nothing(env: dict[str, str], server: str) -> None:
    env["LOOPGUARD_HOOK_SERVER"] = server
    assert hook(event("UserPromptSubmit", 0, prompt="go"), env).returncode == 0
    if server == "on":
        assert wait_for(lambda: sockets(env))
    calls = range(1, 13)  # one response with twelve different calls, all hooks at once
    with ThreadPoolExecutor(max_workers=12) as pool:
        pres = list(pool.map(lambda n: hook(event("PreToolUse", n), env), calls))
        posts = list(
            pool.map(
                lambda n: hook(event("PostToolUse", n, tool_response={"stdout": f"{n}"}), env),
                calls,
            )
        )
    for done in pres + posts:
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {}
        assert b"Traceback" not in done.stderr and b"allowed)" not in done.stderr
    rows = history_rows(env, "s-proc")
    assert sorted(rows) == sorted(
        [("PreToolUse", "allow")] * 12 + [("PostToolUse", "ran:allow")] * 12
    )
    # the store holds every call once
    check = (
        "from loopguard import Guard; from loopguard.stores.sqlite import SqliteStore;"
        "import sys; g = Guard.default(store=SqliteStore(sys.argv[1]));"
        "print(len(g.session('s-proc').history()))"
    )
    db = str(Path(env["XDG_STATE_HOME"]) / "loopguard" / "hooks.db")
    out = subprocess.run([sys.executable, "-c", check, db], capture_output=True, text=True)
    assert out.stdout.strip() == "12", out.stderr


def test_the_server_answers_later_events_the_same_way(env: dict[str, str]) -> None:
    env["LOOPGUARD_HOOK_SERVER"] = "on"
    answers = []
    for n in (1, 2, 3, 4):
        repeat = event("PreToolUse", n, tool_input={"command": "make build"})
        done = hook(repeat, env)
        answers.append(json.loads(done.stdout))
        if not answers[-1]:
            failed = event("PostToolUseFailure", n, tool_input={"command": "make build"}, error="2")
            hook(failed, env)
            hook(event("PostToolBatch", n), env)
        if n == 1:
            assert wait_for(lambda: sockets(env))  # the first event started the server
    assert answers[:2] == [{}, {}]
    assert answers[2]["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert answers[3]["continue"] is False


def test_the_server_uses_the_clients_project_rules(env: dict[str, str], tmp_path: Path) -> None:
    env["LOOPGUARD_HOOK_SERVER"] = "on"
    hook(event("SessionStart", 0), env)
    assert wait_for(lambda: sockets(env))
    project = tmp_path / "project"
    project.mkdir()
    (project / "loopguard.yaml").write_text(
        "version: 1\nkeyword_sets:\n  build: ['is the build green']\nintents:\n"
        "  - id: b\n    when: {text_contains: build}\n    require: {tool: Bash}\n",
        encoding="utf-8",
    )
    with_project = {**env, "CLAUDE_PROJECT_DIR": str(project)}
    hook(event("UserPromptSubmit", 0, prompt="is the build green?"), with_project)
    stop = hook(event("Stop", 0, last_assistant_message="yes"), with_project)
    assert json.loads(stop.stdout)["decision"] == "block"
    hook(event("UserPromptSubmit", 0, session="other", prompt="is the build green?"), env)
    assert json.loads(hook(event("Stop", 0, session="other"), env).stdout) == {}


def test_a_changed_installation_retires_the_server(env: dict[str, str], tmp_path: Path) -> None:
    extra = tmp_path / "site"
    extra.mkdir()
    env["LOOPGUARD_HOOK_SERVER"] = "on"
    env["PYTHONPATH"] = str(extra)  # a folder on sys.path, as site-packages is
    hook(event("SessionStart", 0), env)
    assert wait_for(lambda: sockets(env))
    (extra / "newplugin-1.0.dist-info").mkdir()  # what installing a distribution does
    assert wait_for(lambda: server_pids(Path(env["XDG_RUNTIME_DIR"])))
    first = server_pids(Path(env["XDG_RUNTIME_DIR"]))
    done = hook(event("PreToolUse", 1), env)  # the server says stale; answered here
    assert done.returncode == 0 and json.loads(done.stdout) == {}
    assert wait_for(lambda: not first & server_pids(Path(env["XDG_RUNTIME_DIR"])), 10)


def test_garbage_on_the_socket_does_not_stop_the_server(env: dict[str, str]) -> None:
    env["LOOPGUARD_HOOK_SERVER"] = "on"
    hook(event("SessionStart", 0), env)
    assert wait_for(lambda: sockets(env))
    for junk in (b"", b"\x00\x00\x00\x05hello", b"\xff\xff\xff\xff", b"\x00\x00\x00\x02{}"):
        probe = socket.socket(socket.AF_UNIX)
        probe.connect(str(sockets(env)[0]))
        probe.sendall(junk)
        probe.close()
    done = hook(event("PreToolUse", 1), env)
    assert done.returncode == 0 and json.loads(done.stdout) == {} and not done.stderr


def test_an_idle_server_exits(env: dict[str, str]) -> None:
    env.update(LOOPGUARD_HOOK_SERVER="on", LOOPGUARD_HOOK_SERVER_IDLE="1")
    hook(event("SessionStart", 0), env)
    assert wait_for(lambda: sockets(env))
    assert wait_for(lambda: not sockets(env), 15)


def test_with_the_server_off_no_server_starts(env: dict[str, str]) -> None:
    for n in range(3):
        assert hook(event("PreToolUse", n), env).returncode == 0
    time.sleep(0.5)
    assert sockets(env) == []


@pytest.mark.parametrize(
    "stdin",
    [b"", b"garbage", b"[]", b'{"hook_event_name": 3}'],
    ids=["empty", "text", "list", "odd"],
)
@pytest.mark.parametrize("server", ["off", "on"])
def test_bad_events_are_allowed_with_exit_0(env: dict[str, str], stdin: bytes, server: str) -> None:
    env["LOOPGUARD_HOOK_SERVER"] = server
    done = hook(stdin, env)
    assert done.returncode == 0 and json.loads(done.stdout) == {}
    assert b"the call is allowed" in done.stderr and b"Traceback" not in done.stderr


def test_a_damaged_state_file_is_allowed_with_exit_0(env: dict[str, str]) -> None:
    state = Path(env["XDG_STATE_HOME"]) / "loopguard"
    state.mkdir(parents=True)
    (state / "hooks.db").write_bytes(b"\x00garbage" * 500)
    done = hook(event("PreToolUse", 1), env)
    assert done.returncode == 0 and json.loads(done.stdout) == {}
    assert b"Traceback" not in done.stderr
    assert "DatabaseError" in (state / "hooks.log").read_text(encoding="utf-8")


def test_a_locked_state_file_is_waited_for_then_answered(env: dict[str, str]) -> None:
    hook(event("SessionStart", 0), env)
    db = sqlite3.connect(Path(env["XDG_STATE_HOME"]) / "loopguard" / "hooks.db", timeout=1)
    db.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        done = hook(event("PreToolUse", 1), env)
    finally:
        db.rollback()
        db.close()
    assert done.returncode == 0 and json.loads(done.stdout) == {}
    assert b"Traceback" not in done.stderr
    assert time.monotonic() - started < 60


def test_relative_rules_and_store_paths_mean_the_hooks_folder(
    env: dict[str, str], tmp_path: Path
) -> None:
    """The server runs elsewhere: LOOPGUARD_RULES and LOOPGUARD_STORE relative to the hook's
    own working folder still name the files there."""
    env["LOOPGUARD_HOOK_SERVER"] = "on"
    work = tmp_path / "work"
    work.mkdir()
    (work / "rules.yaml").write_text(
        "version: 1\nkeyword_sets:\n  build: ['is the build green']\nintents:\n"
        "  - id: b\n    when: {text_contains: build}\n    require: {tool: Bash}\n",
        encoding="utf-8",
    )
    env.update(LOOPGUARD_RULES="rules.yaml", LOOPGUARD_STORE="state.db")

    def run(payload: bytes) -> Any:
        done = subprocess.run(
            [*LOOPGUARD, "hook", "claude"],
            input=payload,
            env=env,
            cwd=work,
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    run(event("SessionStart", 0))
    assert wait_for(lambda: sockets(env))
    run(event("UserPromptSubmit", 0, prompt="is the build green?"))
    assert run(event("Stop", 0, last_assistant_message="yes"))["decision"] == "block"
    assert (work / "state.db").exists()


@pytest.mark.parametrize("server", ["off", "on"])
def test_loopguard_store_can_be_redis(env: dict[str, str], redis_url: str, server: str) -> None:
    """LOOPGUARD_STORE=redis://…: the sessions live on the (real, test-started) Valkey server,
    not in hooks.db, and a loop is still caught across hook processes."""
    session = f"s-redis-{server}-{os.getpid()}"
    env.update(LOOPGUARD_STORE=redis_url, LOOPGUARD_HOOK_SERVER=server)
    answers = []
    for n in (1, 2, 3):
        args = {"command": "make build"}
        done = hook(event("PreToolUse", n, session, tool_input=args), env)
        answers.append(json.loads(done.stdout))
        if not answers[-1]:
            hook(event("PostToolUseFailure", n, session, tool_input=args, error="2"), env)
            hook(event("PostToolBatch", n, session), env)
    assert answers[:2] == [{}, {}]
    assert answers[2]["hookSpecificOutput"]["permissionDecision"] == "deny"
    db = sqlite3.connect(Path(env["XDG_STATE_HOME"]) / "loopguard" / "hooks.db")
    try:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        if "loopguard_sessions" in tables:
            count = db.execute(
                "SELECT count(*) FROM loopguard_sessions WHERE key = ?", (session,)
            ).fetchone()[0]
            assert count == 0
    finally:
        db.close()
