"""The shared part of the fake model servers: a threaded HTTP server on 127.0.0.1 that keeps
every request and asks a script what the model answers next."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# One model turn: a final text, or a list of tool calls (name, arguments) made in one response.
Turn = str | list[tuple[str, dict[str, Any]]]


class Script:
    """Model turns in order; after the last, `then` answers (a callable of the turn index), or
    the last turn repeats when `repeat_last` is set, else a final "done"."""

    def __init__(
        self,
        turns: Sequence[Turn],
        *,
        repeat_last: bool = False,
        then: Callable[[int], Turn] | None = None,
    ) -> None:
        self.turns = list(turns)
        self.repeat_last = repeat_last
        self.then = then

    def __call__(self, index: int) -> Turn:
        if index < len(self.turns):
            return self.turns[index]
        if self.then is not None:
            return self.then(index)
        if self.repeat_last and self.turns:
            return self.turns[-1]
        return "done"


class FakeModelServer:
    """Base: subclasses say which requests are the agent's model calls and how to answer."""

    def __init__(self, script: Script | Sequence[Turn]) -> None:
        self.script = script if isinstance(script, Script) else Script(script)
        self.requests: list[dict[str, Any]] = []  # model-call bodies, in arrival order
        self.other_requests: list[tuple[str, str]] = []  # (method, path) of anything else
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"fake": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def __enter__(self) -> FakeModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def next_turn(self, body: dict[str, Any]) -> tuple[int, Turn]:
        """Record one model call and return its number (from 0) and the scripted turn."""
        with self._lock:
            self.requests.append(body)
            index = len(self.requests) - 1
        return index, self.script(index)

    def note_other(self, method: str, path: str) -> None:
        with self._lock:
            self.other_requests.append((method, path))

    # Subclasses implement these.
    def is_model_call(self, method: str, path: str) -> bool:
        raise NotImplementedError

    def respond(self, handler: _Handler, path: str, body: dict[str, Any]) -> None:
        raise NotImplementedError


class _Handler(BaseHTTPRequestHandler):
    fake: FakeModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("content-encoding", "").lower() == "zstd":
            return {"_undecoded": True}
        try:
            doc = json.loads(raw or b"{}")
        except ValueError:
            return {}
        return doc if isinstance(doc, dict) else {}

    def _handle(self, method: str) -> None:
        body = self._body() if method == "POST" else {}
        if self.fake.is_model_call(method, self.path):
            self.fake.respond(self, self.path, body)
        else:
            self.fake.note_other(method, self.path)
            self.send_json(404, {"error": {"message": "not here", "code": 404}})

    def do_POST(self) -> None:  # noqa: N802 — the http.server naming
        self._handle("POST")

    def do_GET(self) -> None:  # noqa: N802
        self._handle("GET")

    def send_json(self, status: int, doc: Any) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_sse(self, events: list[tuple[str | None, Any]]) -> None:
        """Server-sent events, `event:` lines where a name is given, then the connection closes."""
        chunks = []
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            chunks.append(f"{head}data: {json.dumps(data)}\n\n")
        payload = "".join(chunks).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()
