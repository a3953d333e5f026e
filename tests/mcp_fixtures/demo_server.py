"""A small real MCP server (stdio) for the mcp-proxy tests.

Usage: python demo_server.py LOG_FILE. Every tool call that reaches this server appends
one line (the tool's name) to LOG_FILE, so a test can tell forwarded calls from calls the
proxy answered itself.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import InputRequiredResult

LOG = Path(sys.argv[1])
logging.getLogger("mcp").setLevel(logging.CRITICAL)  # the failing tool's log lines are noise here
server = MCPServer("demo", instructions="A demo server for loopguard's MCP proxy tests.")
count = 0


def _seen(tool: str) -> None:
    with LOG.open("a", encoding="utf-8") as log:
        log.write(tool + "\n")


@server.tool()
def deploy(target: str) -> str:
    """Always fails the same way."""
    _seen("deploy")
    raise ToolError(f"permission denied deploying to {target}")


@server.tool()
async def slow_fail(job: str) -> str:
    """Fails the same way after half a second (long enough for calls to overlap)."""
    _seen("slow_fail")
    await anyio.sleep(0.5)
    raise ToolError(f"disk full while running {job}")


@server.tool()
def echo(text: str) -> str:
    """Returns its text."""
    _seen("echo")
    return text


WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")


@server.tool()
def counter() -> str:
    """Returns something new on every call (words, not digits: the guard compares results
    with digits blinded, so "count is 1" and "count is 2" would be the same outcome)."""
    global count
    _seen("counter")
    count += 1
    return f"now at {WORDS[count % len(WORDS)]}"


@server.tool()
def confirm(item: str, ctx: Context) -> str | InputRequiredResult:
    """Asks the client for input first (2026-07-28 multi-round-trip), then answers."""
    _seen("confirm")
    if ctx.request_state is None:
        return InputRequiredResult(request_state=f"asked about {item}")
    return f"{item} confirmed ({ctx.request_state})"


@server.prompt()
def greet(name: str) -> str:
    """A prompt, to show prompts pass through the proxy."""
    return f"Say hello to {name}."


@server.resource("demo://motd")
def motd() -> str:
    """A resource, to show resources pass through the proxy."""
    return "message of the day"


if __name__ == "__main__":
    server.run()
