"""The hook server: one long-lived process per user and interpreter that answers hook events.

A hook process costs a Python start plus loopguard's imports and the guard's set-up on
every tool call. The first `loopguard hook` run that finds no server answers its event
itself and starts one in the background (`spawn`); later runs send their event over a
Unix socket (`loopguard.hooks.client`) and print what the server answers: the same
`runner` code, in a process whose imports and guard are already loaded.

- One server per socket: `paths.runtime_dir()/hook-<id>.sock`, where the id covers the
  interpreter and the state and cache folders; the socket's folder is private (0700).
- Each request runs with the client's environment variables that matter (project folder,
  rules, store, plugin switches), one request at a time; sessions still live in hooks.db
  under the per-session lock, so a server and one-shot hook processes can mix.
- The server answers `stale` and exits when the installed distributions (the guard
  cache's fingerprint) change, so an upgrade or a new plugin is never missed; it exits
  after `LOOPGUARD_HOOK_SERVER_IDLE` seconds without a request (default 600).
- Anything that goes wrong between client and server makes the client answer the event
  itself; the server never takes the agent down.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import selectors
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from loopguard.hooks import guardcache, paths, runner
from loopguard.hooks.client import FORWARDED_ENV, PROTOCOL, read_frame, write_frame

DEFAULT_IDLE_S = 600.0


def answer(request: dict[str, Any], payload: bytes) -> dict[str, Any]:
    """Run one event as `loopguard hook` would, with the client's environment."""
    saved = {name: os.environ.get(name) for name in FORWARDED_ENV}
    given = request.get("env")
    env: dict[str, Any] = given if isinstance(given, dict) else {}
    for name in FORWARDED_ENV:
        value = env.get(name)
        if isinstance(value, str):
            os.environ[name] = value
        else:
            os.environ.pop(name, None)
    out, err = io.StringIO(), io.StringIO()
    try:
        argv = [str(word) for word in request.get("argv") or ()]
        with contextlib.redirect_stderr(err):
            code = runner.main(argv, stdin=io.BytesIO(payload), stdout=out)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def serve(path: Path, identity: str, idle_s: float) -> int:
    """Listen on `path` until idle for `idle_s` or the installation changes."""
    started_with = guardcache.fingerprint()
    os.chdir("/")  # hold no folder of the project that started it (every path is absolute)
    listener = _bind(path)
    if listener is None:
        return 0  # another server has the socket
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    try:
        while True:
            if not selector.select(timeout=idle_s):
                return 0
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                if _one(conn, identity, started_with) == "stale":
                    return 0
    finally:
        selector.close()
        listener.close()
        with contextlib.suppress(OSError):
            if path.exists() and path.stat().st_ino == _bound_inode.get(str(path)):
                path.unlink()


_bound_inode: dict[str, int] = {}


def _one(conn: socket.socket, identity: str, started_with: Any) -> str:
    """Serve one request; "stale" when the server must go."""
    conn.settimeout(30.0)
    try:
        request = json.loads(read_frame(conn, 1 << 20))
        payload = read_frame(conn, paths.MAX_EVENT_BYTES + 1)
        if not isinstance(request, dict) or request.get("protocol") != PROTOCOL:
            write_frame(conn, json.dumps({"refused": "protocol"}).encode())
            return "refused"
        if request.get("identity") != identity or guardcache.fingerprint() != started_with:
            write_frame(conn, json.dumps({"refused": "stale"}).encode())
            return "stale"
        write_frame(conn, json.dumps(answer(request, payload)).encode())
        return "answered"
    except (OSError, ValueError, ConnectionError):
        return "broken"  # the client answers the event itself


def _bind(path: Path) -> socket.socket | None:
    """A listening socket at `path`, or None when a live server already listens there."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(OSError):
        os.chmod(path.parent, 0o700)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(0.5)
        probe.connect(str(path))
        return None  # somebody answers: leave it be
    except OSError:
        with contextlib.suppress(OSError):
            path.unlink()  # a dead server's socket file
    finally:
        probe.close()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))
    except OSError:
        listener.close()
        return None  # lost the race to another new server
    os.chmod(path, 0o600)
    _bound_inode[str(path)] = path.stat().st_ino
    listener.listen(64)
    return listener


def spawn(path: Path, identity: str) -> None:
    """Start a server in the background for later events (never raises, never waits)."""
    try:
        child = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "loopguard.hooks.server", str(path), identity],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except (OSError, ValueError):
        return
    child.returncode = 0  # never waited for: it outlives this process by design


def idle_seconds() -> float:
    try:
        value = float(os.environ.get(paths.SERVER_IDLE_ENV, "") or DEFAULT_IDLE_S)
    except ValueError:
        return DEFAULT_IDLE_S
    return value if 0 < value < 86400 * 7 else DEFAULT_IDLE_S


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m loopguard.hooks.server SOCKET IDENTITY", file=sys.stderr)
        return 2
    try:
        return serve(Path(argv[0]), argv[1], idle_seconds())
    except Exception:  # noqa: BLE001 - a server that cannot run just is not there
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
