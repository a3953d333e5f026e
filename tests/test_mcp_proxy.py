"""`loopguard mcp-proxy` end to end: the MCP SDK's own client, through the proxy, to a real
MCP server process (tests/mcp_fixtures/demo_server.py, which logs every call it gets)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.client.session
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import InputRequiredResult

from loopguard.session import answers
from loopguard.session.guard import Guard

pytestmark = pytest.mark.slow

SERVER = Path(__file__).parent / "mcp_fixtures" / "demo_server.py"
EXTRA_HINT = '(in a clone of loopguard: pip install ".[mcp]")'


def proxy(log: Path, *options: str) -> list[str]:
    """The command line of the proxy in front of the demo server."""
    return [sys.executable, "-m", "loopguard", "mcp-proxy", *options, "--", *server(log)]


def server(log: Path) -> list[str]:
    return [sys.executable, str(SERVER), str(log)]


@asynccontextmanager
async def connect(
    command: list[str], errlog: Any, env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def forwarded(log: Path) -> list[str]:
    """The tool calls that reached the server, in order."""
    return log.read_text(encoding="utf-8").split() if log.exists() else []


def dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content]


def run_client(scenario: Any, tmp_path: Path) -> tuple[Any, str]:
    """Run an async scenario(errlog); its value and what the proxy wrote on stderr."""
    err = tmp_path / "stderr.txt"
    with err.open("w", encoding="utf-8") as errlog:
        value = anyio.run(scenario, errlog)
    return value, err.read_text(encoding="utf-8")


def test_the_handshake_listings_and_results_pass_through_unchanged(tmp_path: Path) -> None:
    async def session_view(command: list[str], errlog: Any) -> dict[str, Any]:
        async with connect(command, errlog) as session:
            init = session.initialize_result
            assert init is not None
            return {
                "server": dump(init.server_info),
                "instructions": init.instructions,
                "capabilities": dump(init.capabilities),
                "tools": dump(await session.list_tools()),
                "prompts": dump(await session.list_prompts()),
                "prompt": dump(await session.get_prompt("greet", {"name": "Ada"})),
                "resources": dump(await session.list_resources()),
                "resource": dump(await session.read_resource("demo://motd")),
                "echo": [dump(await session.call_tool("echo", {"text": t})) for t in "ab"],
                "counter": [dump(await session.call_tool("counter", {})) for _ in range(6)],
            }

    async def both(errlog: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        direct = await session_view(server(tmp_path / "direct.log"), errlog)
        through = await session_view(proxy(tmp_path / "proxied.log"), errlog)
        return direct, through

    (direct, through), stderr = run_client(both, tmp_path)
    assert [t["name"] for t in through["tools"]["tools"]] == [
        "deploy",
        "slow_fail",
        "echo",
        "counter",
        "confirm",
    ]
    assert through == direct
    # a result that changes every time is never a loop: all six counter calls ran
    counter_texts = [r["content"][0]["text"] for r in through["counter"]]
    assert len(set(counter_texts)) == 6 and not any(r["isError"] for r in through["counter"])
    assert forwarded(tmp_path / "proxied.log") == ["echo"] * 2 + ["counter"] * 6
    assert "Traceback" not in stderr


def test_the_third_identical_failing_call_is_answered_by_the_guard(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"

    async def scenario(errlog: Any) -> list[Any]:
        async with connect(proxy(log), errlog) as session:
            return [await session.call_tool("deploy", {"target": "prod"}) for _ in range(3)]

    results, stderr = run_client(scenario, tmp_path)
    first, second, third = results
    assert first.is_error and second.is_error
    failure = texts(first)[0]
    assert texts(second) == [failure] and "permission denied" in failure
    # the third never reached the server: the guard answered it, as a tool result
    assert forwarded(log) == ["deploy", "deploy"]
    assert third.is_error and len(third.content) == 1
    # ... with the very text the Session API gives for the same three calls
    session = Guard.default().session("expected")
    for n in (1, 2):
        session.before_call("deploy", {"target": "prod"}, call_id=n)
        session.after_call("deploy", {"target": "prod"}, error=failure, call_id=n)
    decision = session.before_call("deploy", {"target": "prod"}, call_id=3)
    assert decision.action == "critical" and decision.detector == "doom_loop_exact"
    assert texts(third) == [answers.tool_result(decision)]
    answer = json.loads(texts(third)[0])
    assert answer["status"] == "blocked" and answer["detector"] == "doom_loop_exact"
    assert "Traceback" not in stderr


def test_overlapping_calls_are_one_round(tmp_path: Path) -> None:
    """Three identical calls in flight together were chosen together: none is a repeat of
    another (the second gets the guard's "in one response" note), and the round counts as
    one attempt, so a fourth call still runs; the fifth is the third failed attempt."""
    log = tmp_path / "calls.log"
    args = {"job": "backup"}

    async def scenario(errlog: Any) -> tuple[list[Any], list[Any]]:
        async with connect(proxy(log), errlog) as session:
            parallel: list[Any] = [None] * 3

            async def call(i: int) -> None:
                parallel[i] = await session.call_tool("slow_fail", args)

            async with anyio.create_task_group() as tasks:
                for i in range(3):
                    tasks.start_soon(call, i)
            after = [await session.call_tool("slow_fail", args) for _ in range(2)]
            return parallel, after

    (parallel, after), _ = run_client(scenario, tmp_path)
    assert all(r.is_error and "disk full" in texts(r)[0] for r in parallel)
    notes = [t for r in parallel for t in texts(r)[1:]]
    assert len(notes) == 1 and notes[0].startswith("[loopguard] Warning:")
    assert "in one response" in notes[0]
    fourth, fifth = after
    assert "disk full" in texts(fourth)[0]
    assert json.loads(texts(fifth)[0])["status"] == "blocked"
    assert forwarded(log) == ["slow_fail"] * 4


def test_a_call_that_asks_for_input_is_one_call_across_its_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2026-07-28: a call answered `input_required` is retried with the input; the retry is
    the same call, so three interactive calls with the same outcome are three, not six."""
    log = tmp_path / "calls.log"
    # server/discover is the first request and the client allows it 10 s: on a loaded
    # machine two cold starts of the SDK (the proxy's, then the server's) can take longer
    monkeypatch.setattr(mcp.client.session, "DISCOVER_TIMEOUT_SECONDS", 120.0)

    async def interactive(session: ClientSession) -> Any:
        first = await session.call_tool("confirm", {"item": "x"}, allow_input_required=True)
        if not isinstance(first, InputRequiredResult):
            return first  # answered at once (by the guard)
        return await session.call_tool(
            "confirm", {"item": "x"}, allow_input_required=True, request_state=first.request_state
        )

    async def scenario(errlog: Any) -> tuple[str | None, list[Any]]:
        params = StdioServerParameters(command=sys.executable, args=proxy(log)[1:])
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.discover()
                return session.protocol_version, [await interactive(session) for _ in range(3)]

    (version, results), _ = run_client(scenario, tmp_path)
    assert version == "2026-07-28"
    assert [texts(r) for r in results[:2]] == [["x confirmed (asked about x)"]] * 2
    assert results[2].is_error and json.loads(texts(results[2])[0])["status"] == "blocked"
    assert forwarded(log) == ["confirm"] * 4  # two requests each for calls 1 and 2


def test_a_warning_is_appended_to_the_result_the_server_gave(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "version: 1\nextends: [builtin:default]\n"
        "loop_detection: {enabled: true, warning_threshold: 2}\n",
        encoding="utf-8",
    )
    log = tmp_path / "calls.log"

    async def scenario(errlog: Any) -> list[Any]:
        # the rules come from LOOPGUARD_RULES (no --rules)
        async with connect(proxy(log), errlog, env={"LOOPGUARD_RULES": str(rules)}) as session:
            return [await session.call_tool("counter", {}) for _ in range(3)]

    results, _ = run_client(scenario, tmp_path)
    assert [len(r.content) for r in results] == [1, 1, 2]
    third = results[2]
    assert texts(third)[0].startswith("now at ") and not third.is_error
    assert third.structured_content == {"result": texts(third)[0]}  # the server's, untouched
    assert texts(third)[1].startswith("[loopguard] Warning: counter was already called 2 times")
    assert forwarded(log) == ["counter"] * 3


def test_a_guard_failure_lets_the_call_through(tmp_path: Path) -> None:
    """An exception inside loopguard (forced here in both session methods) fails open."""
    log = tmp_path / "calls.log"
    broken = (
        "import sys\n"
        "from loopguard.session.session import Session\n"
        "def broken(*args, **kwargs):\n"
        "    raise RuntimeError('state lost')\n"
        "Session.before_call = Session.after_call = broken\n"
        "from loopguard.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    command = [sys.executable, "-c", broken, "mcp-proxy", "--", *server(log)]

    async def scenario(errlog: Any) -> list[Any]:
        async with connect(command, errlog) as session:
            return [await session.call_tool("deploy", {"target": "prod"}) for _ in range(4)]

    results, stderr = run_client(scenario, tmp_path)
    assert forwarded(log) == ["deploy"] * 4
    assert all(r.is_error and "permission denied" in texts(r)[0] for r in results)
    lines = [line for line in stderr.splitlines() if "guard failed" in line]
    assert len(lines) == 8  # before and after, four calls
    assert "RuntimeError: state lost" in lines[0] and "Traceback" not in stderr


def run_proxy(*argv: str, prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """The proxy with an open, silent client: stdin stays open until it exits."""
    command = prefix or [sys.executable, "-m", "loopguard"]
    with subprocess.Popen(
        [*command, "mcp-proxy", *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            process.wait(timeout=60)
            out, err = process.communicate()
        finally:
            if process.returncode is None:
                process.kill()
                process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def test_a_server_command_that_does_not_exist_is_a_one_line_error() -> None:
    done = run_proxy("--", "no-such-mcp-server-here")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "loopguard mcp-proxy: cannot start the MCP server: command not found: "
        "'no-such-mcp-server-here'"
    ]
    assert done.stdout == ""


def test_a_server_that_exits_early_ends_the_proxy_with_an_error() -> None:
    done = run_proxy("--", sys.executable, "-c", "import sys; sys.exit(3)")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"loopguard mcp-proxy: the MCP server {sys.executable!r} closed the connection"
    ]


def test_no_server_command_is_a_usage_error() -> None:
    done = run_proxy()
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "loopguard mcp-proxy: no server command given: "
        "loopguard mcp-proxy [OPTIONS] -- COMMAND [ARGS...]"
    ]


def test_without_the_sdk_the_proxy_names_the_extra(tmp_path: Path) -> None:
    # `mcp` blocked as if not installed; everything else as usual
    blocked = (
        "import sys\nsys.modules['mcp'] = None\n"
        "from loopguard.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    )
    done = run_proxy("--", *server(tmp_path / "calls.log"), prefix=[sys.executable, "-c", blocked])
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith("loopguard mcp-proxy: mcp-proxy needs the MCP SDK")
    assert line.endswith(EXTRA_HINT)
    assert not (tmp_path / "calls.log").exists()


def test_loopguard_and_its_cli_load_without_the_sdk() -> None:
    probe = (
        "import sys, loopguard, loopguard.cli\n"
        "loopguard.cli.build_parser()\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
