"""A tiny local fake of the Anthropic Messages API for the Claude Code CLI, on 127.0.0.1.

Used by with_claude_agent_sdk.py and by the tests, so both run offline with no API key.

It answers `POST /v1/messages` (streamed as server-sent events when asked, else JSON).
A request that offers the tool named `tool` is the agent's conversation: `reply(body)`
decides the answer, a text or a list of tool calls. Any other request (titles, quotas,
summaries) gets a short text. Every request body is kept in `requests`.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Any  # a str, or a list of (tool name, input dict)


class FakeMessagesApi:
    def __init__(self, tool: str, reply: Callable[[dict[str, Any]], Reply]) -> None:
        self.tool = tool
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"api": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeMessagesApi:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def conversation(self) -> list[dict[str, Any]]:
        """The requests of the agent's conversation (those offering the tool)."""
        with self._lock:
            return [r for r in self.requests if self._offers_tool(r)]

    def _offers_tool(self, body: dict[str, Any]) -> bool:
        return any(
            isinstance(t, dict) and t.get("name") == self.tool for t in body.get("tools") or []
        )

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The assistant message for one request."""
        with self._lock:
            self.requests.append(body)
            ours = self._offers_tool(body)
            number = next(self._ids)
        reply = self.reply(body) if ours else "ok"
        if isinstance(reply, str):
            content: list[dict[str, Any]] = [{"type": "text", "text": reply}]
            stop = "end_turn"
        else:
            content = [
                {"type": "tool_use", "id": f"toolu_{number}_{i}", "name": name, "input": args}
                for i, (name, args) in enumerate(reply)
            ]
            stop = "tool_use"
        return {
            "id": f"msg_{number}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }


class _Handler(BaseHTTPRequestHandler):
    api: FakeMessagesApi

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 — the http.server naming
        length = int(self.headers.get("content-length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            body = {}
        if not self.path.startswith("/v1/messages") or self.path.startswith(
            "/v1/messages/count_tokens"
        ):
            self._json({"input_tokens": 10} if "count_tokens" in self.path else {})
            return
        message = self.api.answer(body)
        if body.get("stream"):
            self._stream(message)
        else:
            self._json(message)

    def do_GET(self) -> None:  # noqa: N802
        self._json({})

    def do_HEAD(self) -> None:  # noqa: N802
        self.send_response(200)
        self.end_headers()

    def _json(self, doc: dict[str, Any]) -> None:
        data = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, message: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.end_headers()
        start = dict(message, content=[], stop_reason=None)
        events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
        for index, block in enumerate(message["content"]):
            if block["type"] == "text":
                events += [
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "text", "text": ""},
                    },
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": block["text"]},
                    },
                ]
            else:
                events += [
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": dict(block, input={}),
                    },
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {
                            "type": "input_json_delta",
                            "partial_json": json.dumps(block["input"]),
                        },
                    },
                ]
            events.append({"type": "content_block_stop", "index": index})
        events += [
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
            {"type": "message_stop"},
        ]
        for event in events:
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        self.wfile.flush()
