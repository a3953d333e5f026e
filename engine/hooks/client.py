"""The first thing `loopguard hook DIALECT` runs: hand the event to the hook server.

This module is all a hook process imports when a server runs (see `loopguard.hooks.server`):
the standard library's socket and JSON, nothing of the engine. It reads the event, sends it
with the few environment variables that matter, and prints the server's answer. When no
server answers (none started yet, a stale one, a platform without Unix sockets, or
`LOOPGUARD_HOOK_SERVER=off`) the event is answered here by `runner`, as a one-shot
process, and a server is started in the background for the next event.
"""

from __future__ import annotations

import io
import json
import os
import socket
import struct
import sys
import time
import zlib
from pathlib import Path
from typing import Any

from loopguard.hooks import paths

PROTOCOL = 1
FORWARDED_ENV = (  # the client's variables a request runs with (the rest: the server's own)
    "CLAUDE_PROJECT_DIR",
    "GEMINI_PROJECT_DIR",
    paths.RULES_ENV,
    paths.STORE_ENV,
    "LOOPGUARD_DISABLE_PLUGIN_AUTOLOAD",
    "LOOPGUARD_BLOCK_PLUGINS",
)
CONNECT_TIMEOUT_S = 0.5
ANSWER_TIMEOUT_S = 25.0  # the agents' hook timeouts are 30 s and more
SPAWN_PAUSE_S = 5.0  # a new server is started at most this often (parallel calls start many)
MAX_SOCKET_PATH = 100  # bytes; AF_UNIX paths are limited (108 on Linux, 104 on macOS)
_HEADER = struct.Struct("!I")


def main(argv: list[str]) -> int:
    """`loopguard hook` with `argv` after it: the server's answer, else a one-shot answer."""
    for name in ("stdout", "stderr"):  # closed (`>&-`): nowhere to answer, nothing may fail
        if getattr(sys, name) is None:
            setattr(sys, name, io.StringIO())
    data = _read_event()
    words = _absolute_rules(argv)
    try:
        address = server_address() if enabled() else None
        reply = ask(address, words, data) if address is not None else None
    except Exception:  # noqa: BLE001 - whatever the socket did, the event is answered here
        address = reply = None
    code = reply.get("code") if reply is not None else None
    if isinstance(code, int) and not isinstance(code, bool) and code in (0, 1, 2):
        sys.stdout.write(str(reply.get("stdout", "")))  # type: ignore[union-attr]
        sys.stdout.flush()
        if reply.get("stderr"):  # type: ignore[union-attr]
            sys.stderr.write(str(reply["stderr"]))  # type: ignore[index]
        return code
    try:
        from loopguard.hooks import runner  # the one-shot path: the whole engine
    except Exception as exc:  # noqa: BLE001 - a broken installation still never blocks a call
        sys.stderr.write(f"loopguard hook: cannot load the guard ({exc}); the call is allowed\n")
        sys.stdout.write("{}\n")
        return 0
    code = runner.main(words, stdin=io.BytesIO(data))
    if address is not None:
        try:
            _start_server(address)
        except Exception:  # noqa: BLE001 - no server this time; the next event tries again
            pass
    return code


def _read_event() -> bytes:
    """The event on stdin (at most the limit + 1 byte); empty when stdin is closed or cannot be
    read: the runner answers that as any unusable event (the call is allowed)."""
    if sys.stdin is None:
        return b""
    try:
        return sys.stdin.buffer.read(paths.MAX_EVENT_BYTES + 1)
    except (OSError, ValueError):
        return b""


def enabled() -> bool:
    value = os.environ.get(paths.SERVER_ENV, "").strip().lower()
    return hasattr(socket, "AF_UNIX") and value not in ("0", "off", "false", "no")


def server_address() -> tuple[Path, str] | None:
    """(socket path, identity) of this interpreter's server for these folders, or None when
    the path would be too long for a Unix socket."""
    identity = "|".join(
        [
            str(PROTOCOL),
            sys.executable,
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            str(paths.state_dir()),
            str(paths.cache_dir()),
        ]
    )
    name = f"hook-{zlib.crc32(identity.encode('utf-8', 'replace')):08x}.sock"
    path = paths.runtime_dir() / name
    if len(os.fsencode(str(path))) > MAX_SOCKET_PATH:
        return None
    return path, identity


def ask(address: tuple[Path, str], argv: list[str], data: bytes) -> dict[str, Any] | None:
    """The server's reply; None when no server answered (the caller answers the event)."""
    path, identity = address
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(CONNECT_TIMEOUT_S)
        try:
            conn.connect(str(path))
        except OSError:
            return None
        conn.settimeout(ANSWER_TIMEOUT_S)
        request = {
            "protocol": PROTOCOL,
            "identity": identity,
            "argv": argv,
            "env": forwarded_env(),
        }
        try:
            write_frame(conn, json.dumps(request).encode())
            write_frame(conn, data)
            reply = json.loads(read_frame(conn, 1 << 30))
        except TimeoutError:
            # the server has the event and may have applied it: answering it again here
            # could count the call twice, so this one call is let through unguarded
            return {"code": 0, "stdout": "{}\n", "stderr": _timeout_line(argv)}
        except (OSError, ValueError, ConnectionError):
            return None
        return reply if isinstance(reply, dict) else None
    finally:
        conn.close()


def forwarded_env() -> dict[str, str]:
    """The variables a request runs with; relative paths made absolute (the server runs in
    another folder)."""
    env = {name: os.environ[name] for name in FORWARDED_ENV if name in os.environ}
    if env.get(paths.RULES_ENV):
        env[paths.RULES_ENV] = _absolute(env[paths.RULES_ENV])
    store = env.get(paths.STORE_ENV, "")
    if store and "://" not in store and not store.startswith("sqlite:"):
        env[paths.STORE_ENV] = os.path.abspath(store)
    return env


def read_frame(conn: socket.socket, limit: int) -> bytes:
    """One length-prefixed frame; ConnectionError when the peer stops short or sends too much."""
    size = _HEADER.unpack(_exactly(conn, _HEADER.size))[0]
    if size > limit:
        raise ConnectionError(f"a frame of {size} bytes is over the limit")
    return _exactly(conn, size)


def write_frame(conn: socket.socket, data: bytes) -> None:
    conn.sendall(_HEADER.pack(len(data)) + data)


def _exactly(conn: socket.socket, size: int) -> bytes:
    parts, left = [], size
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _absolute_rules(argv: list[str]) -> list[str]:
    """`--rules` made absolute: the server runs in another folder."""
    words = list(argv)
    for i, word in enumerate(words):
        if word == "--rules" and i + 1 < len(words):
            words[i + 1] = _absolute(words[i + 1])
        elif word.startswith("--rules="):
            words[i] = "--rules=" + _absolute(word.partition("=")[2])
    return words


def _absolute(rules: str) -> str:
    return rules if rules.startswith("builtin:") else os.path.abspath(rules)


def _timeout_line(argv: list[str]) -> str:
    dialect = argv[0] if argv else "?"
    return f"loopguard hook {dialect}: the hook server did not answer in time (allowed)\n"


def _start_server(address: tuple[Path, str]) -> None:
    """Start a server unless one was started moments ago (parallel calls would start many)."""
    path, identity = address
    marker = path.with_name(path.name + ".started")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if time.time() - marker.stat().st_mtime < SPAWN_PAUSE_S:
            return
    except FileNotFoundError:
        pass
    except OSError:
        return
    try:
        marker.touch()
    except OSError:
        return
    from loopguard.hooks import server

    server.spawn(path, identity)
