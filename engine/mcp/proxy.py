"""The MCP stdio proxy: the client's connection on stdio, the real server as a child process.

The proxy relays JSON-RPC messages, not MCP objects: the SDK's stdio transports frame and
parse them (and start, and stop, the child and its process tree), and every message goes
on unchanged — the handshake, capabilities, listings, resources, prompts, notifications,
the server's own requests (sampling, elicitation, roots) and whatever later protocol
versions add. Only `tools/call` is touched (`CallGuard`): a blocked call is answered
here with a `CallToolResult` (`isError`, the guard's text), and a note the guard wants
shown is appended to a result as one more text block.

The SDK is imported inside `serve`, so the package loads without the `[mcp]` extra.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import os
import shutil
import sys
import threading
from collections.abc import Sequence
from typing import Any, cast

from loopguard.errors import install_hint
from loopguard.mcp.calls import CallGuard

EXTRA_HINT = install_hint("mcp")
CANCELLED = "notifications/cancelled"


class ProxyError(Exception):
    """The proxy cannot run (exit code 2) or the server stopped first (1): a one-line reason."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def sdk_problem() -> str | None:
    """Why the MCP SDK cannot be used here, or None when it can."""
    try:
        import mcp.client.stdio  # noqa: F401
        import mcp.server.stdio  # noqa: F401
    except ImportError as exc:
        missing = exc.name or "mcp"
        return f"mcp-proxy needs the MCP SDK ({missing!r} is not importable): {EXTRA_HINT}"
    return None


def command_problem(command: Sequence[str]) -> str | None:
    """Why the server command cannot start, when that shows before starting it."""
    if not command:
        return "no server command given: loopguard mcp-proxy [OPTIONS] -- COMMAND [ARGS...]"
    if shutil.which(command[0]) is None:
        return f"cannot start the MCP server: command not found: {command[0]!r}"
    return None


def report(text: str) -> None:
    """A one-line message on stderr (the MCP client's server log)."""
    print(f"loopguard mcp-proxy: {text}", file=sys.stderr, flush=True)


def serve(command: Sequence[str], calls: CallGuard) -> None:
    """Run the proxy until the client or the server closes the connection.

    Raises `ProxyError` when the server cannot start or ends the connection first.
    """
    import anyio

    problem = command_problem(command)
    if problem is not None:
        raise ProxyError(problem)
    _quiet_sdk_logs()
    ended = anyio.run(_run, list(command), calls, backend="asyncio")
    if ended is not None:
        raise ProxyError(ended, exit_code=1)


async def _run(command: list[str], calls: CallGuard) -> str | None:
    """Relay both ways; the reason the server ended the connection first, else None."""
    from contextlib import AsyncExitStack

    import anyio
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.server.stdio import stdio_server

    # the proxy's whole environment: an MCP client passes the server's settings (tokens,
    # paths) to the command it starts, which is this proxy
    params = StdioServerParameters(
        command=command[0], args=command[1:], env=dict(os.environ), cwd=os.getcwd()
    )
    async with AsyncExitStack() as stack:
        try:
            from_server, to_server = await stack.enter_async_context(stdio_client(params))
        except (OSError, ValueError) as exc:
            raise ProxyError(f"cannot start the MCP server {command[0]!r}: {exc}") from None
        ended: list[str] = []
        with anyio.CancelScope() as stop:
            stdin = cast("anyio.AsyncFile[str]", _Stdin())  # the SDK only iterates over it
            async with stdio_server(stdin=stdin) as (from_client, to_client):
                async with anyio.create_task_group() as tasks:

                    async def client_side() -> None:
                        await _from_client(from_client, to_client, to_server, calls)
                        tasks.cancel_scope.cancel()

                    async def server_side() -> None:
                        await _from_server(from_server, to_client, calls)
                        ended.append(f"the MCP server {command[0]!r} closed the connection")
                        tasks.cancel_scope.cancel()

                    tasks.start_soon(client_side)
                    tasks.start_soon(server_side)
                await to_client.aclose()  # the stdio server's writer flushes and ends
                if ended:  # the client has not closed its side: stop reading it
                    stop.cancel()
        return ended[0] if ended else None
    return None  # pragma: no cover — the stack above always returns


async def _from_client(from_client: Any, to_client: Any, to_server: Any, calls: CallGuard) -> None:
    """Client -> server; a blocked `tools/call` is answered here instead."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    async for item in from_client:
        if isinstance(item, Exception):
            report(f"dropped a message from the client that is not JSON-RPC: {item}")
            continue
        message = item.message
        if isinstance(message, types.JSONRPCRequest) and message.method == "tools/call":
            blocked = calls.request(message.id, message.params)
            if blocked is not None:
                result = types.CallToolResult(
                    content=[types.TextContent(text=blocked)], is_error=True
                )
                answer = types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=_wire(result))
                await to_client.send(SessionMessage(answer))
                continue
        elif isinstance(message, types.JSONRPCNotification) and message.method == CANCELLED:
            if isinstance(message.params, dict):
                calls.cancelled(message.params.get("requestId"))
        await to_server.send(item)


async def _from_server(from_server: Any, to_client: Any, calls: CallGuard) -> None:
    """Server -> client; the answer to a guarded call is recorded, notes appended."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    async for item in from_server:
        if isinstance(item, Exception):
            report(f"dropped a message from the server that is not JSON-RPC: {item}")
            continue
        message = item.message
        if isinstance(message, types.JSONRPCResponse) and calls.is_open(message.id):
            notes = calls.response(message.id, result=message.result)
            if notes and isinstance(message.result.get("content"), list):
                result = dict(message.result)
                blocks = [_wire(types.TextContent(text=note)) for note in notes]
                result["content"] = [*result["content"], *blocks]
                item = SessionMessage(
                    types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result)
                )
        elif isinstance(message, types.JSONRPCError) and calls.is_open(message.id):
            calls.response(message.id, error=message.error.model_dump(mode="json"))
        await to_client.send(item)


class _Stdin:
    """The client's lines, read by a daemon thread.

    The SDK's own stdin reader blocks a worker thread that nothing can stop, so a server
    that ends first would leave the proxy waiting for the client's next line; this one
    is dropped when the proxy ends. (It runs on asyncio, the event loop `serve` starts.)
    """

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._fd = sys.stdin.fileno()
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        threading.Thread(target=self._read, name="loopguard-mcp-stdin", daemon=True).start()

    def _read(self) -> None:
        # os.read, not sys.stdin: a daemon thread blocked inside a buffered reader holds its
        # lock, and the interpreter aborts when it finalizes sys.stdin at exit
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        pending = ""
        try:
            while chunk := os.read(self._fd, 65536):
                lines = (pending + decoder.decode(chunk)).split("\n")
                pending = lines.pop()
                for line in lines:
                    self._put(line + "\n")
        except (OSError, ValueError):  # stdin closed under the reader
            pass
        if pending.strip():
            self._put(pending)
        self._put(None)

    def _put(self, line: str | None) -> None:
        try:
            self._loop.call_soon_threadsafe(self._lines.put_nowait, line)
        except RuntimeError:  # the proxy has ended: its loop is closed
            pass

    def __aiter__(self) -> _Stdin:
        return self

    async def __anext__(self) -> str:
        line = await self._lines.get()
        if line is None:
            raise StopAsyncIteration
        return line


def _wire(model: Any) -> dict[str, Any]:
    return dict(model.model_dump(by_alias=True, mode="json", exclude_none=True))


class _OneLine(logging.Formatter):
    """The SDK's log records as one line each: no tracebacks in the client's server log."""

    def format(self, record: logging.LogRecord) -> str:
        return f"loopguard mcp-proxy: mcp: {record.getMessage()}"


def _quiet_sdk_logs() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    sdk = logging.getLogger("mcp")
    sdk.addHandler(handler)
    sdk.setLevel(logging.WARNING)
    sdk.propagate = False
