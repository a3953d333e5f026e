"""A scripted fake of the Gemini API (generativelanguage v1beta) for the Gemini CLI, on 127.0.0.1.

The CLI (with `GOOGLE_GEMINI_BASE_URL` pointing here) posts each model call to
`/v1beta/models/MODEL:streamGenerateContent?alt=sse` and reads server-sent events, one
`GenerateContentResponse` per event. The agent's conversation calls are those that offer
tools (`functionDeclarations`); other calls (e.g. the CLI's own routing or next-speaker
checks) get a short JSON text answer and are kept in `side_requests`. Token counting
(`:countTokens`) answers a fixed count.
"""

from __future__ import annotations

import json
from typing import Any

from agent_fakes._server import FakeModelServer, Script, Turn, _Handler

__all__ = ["FakeGeminiApi", "Script"]


class FakeGeminiApi(FakeModelServer):
    def __init__(self, script: Script | list[Turn]) -> None:
        super().__init__(script)
        self.side_requests: list[dict[str, Any]] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def is_model_call(self, method: str, path: str) -> bool:
        return method == "POST" and "/models/" in path

    def respond(self, handler: _Handler, path: str, body: dict[str, Any]) -> None:
        route = path.split("?")[0]
        if route.endswith(":countTokens"):
            handler.send_json(200, {"totalTokens": 10})
            return
        streamed = ":streamGenerateContent" in route
        if not _offers_tools(body):
            with self._lock:
                self.side_requests.append(body)
            self._answer(handler, streamed, [{"text": _side_answer(body)}])
            return
        _, turn = self.next_turn(body)
        if not isinstance(turn, str) and _tools_closed(body):
            turn = "(the tools are closed for this request)"  # as a real model must answer
        if isinstance(turn, str):
            parts: list[dict[str, Any]] = [{"text": turn}]
        else:
            parts = [{"functionCall": {"name": name, "args": args}} for name, args in turn]
        self._answer(handler, streamed, parts)

    def _answer(self, handler: _Handler, streamed: bool, parts: list[dict[str, Any]]) -> None:
        doc = {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 5,
                "totalTokenCount": 15,
            },
            "modelVersion": "gemini-2.5-flash",
        }
        if streamed:
            handler.send_sse([(None, doc)])
        else:
            handler.send_json(200, doc)

    # What the model was shown.
    def contents(self, index: int) -> list[dict[str, Any]]:
        """The `contents` (conversation) of model call `index`."""
        items = self.requests[index].get("contents")
        return items if isinstance(items, list) else []

    def function_responses(self, index: int) -> list[dict[str, Any]]:
        """The `functionResponse` parts in model call `index`, in order (name, response)."""
        out = []
        for content in self.contents(index):
            for part in content.get("parts") or []:
                if isinstance(part, dict) and "functionResponse" in part:
                    out.append(part["functionResponse"])
        return out

    def tool_names(self, index: int = 0) -> list[str]:
        names = []
        for tool in self.requests[index].get("tools") or []:
            for decl in tool.get("functionDeclarations") or []:
                names.append(str(decl.get("name")))
        return names


def _offers_tools(body: dict[str, Any]) -> bool:
    return any(
        isinstance(tool, dict) and tool.get("functionDeclarations")
        for tool in body.get("tools") or []
    )


def _tools_closed(body: dict[str, Any]) -> bool:
    """Whether the request forbids function calls (toolConfig mode NONE)."""
    config = (body.get("toolConfig") or {}).get("functionCallingConfig") or {}
    return str(config.get("mode", "")).upper() == "NONE"


def _side_answer(body: dict[str, Any]) -> str:
    """A JSON answer for the CLI's own helper calls (routers and checkers ask for JSON)."""
    config = body.get("generationConfig") or {}
    if config.get("responseMimeType") == "application/json":
        return json.dumps({"reasoning": "fake", "next_speaker": "user", "model_choice": "flash"})
    return "ok"
