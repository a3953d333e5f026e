"""A scripted fake of the OpenAI Responses API for the Codex CLI, on 127.0.0.1.

Codex (a custom model provider with `wire_api = "responses"`) posts each model call to
`/v1/responses` and reads server-sent events: `response.created`, one
`response.output_item.done` per output item (a `function_call` or an assistant `message`)
and `response.completed`. Every request body is kept, so a test can read what the model was
shown next (a tool's output, a hook's deny reason) in `function_call_outputs(i)`.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from agent_fakes._server import FakeModelServer, Script, Turn, _Handler

__all__ = ["FakeResponsesApi", "Script"]


class FakeResponsesApi(FakeModelServer):
    def __init__(self, script: Script | list[Turn]) -> None:
        super().__init__(script)
        self._ids = itertools.count(1)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def is_model_call(self, method: str, path: str) -> bool:
        return method == "POST" and path.split("?")[0].endswith("/responses")

    def respond(self, handler: _Handler, path: str, body: dict[str, Any]) -> None:
        index, turn = self.next_turn(body)
        number = next(self._ids)
        response_id = f"resp_{number}"
        if isinstance(turn, str):
            items: list[dict[str, Any]] = [
                {
                    "type": "message",
                    "id": f"msg_{number}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": turn, "annotations": []}],
                }
            ]
        else:
            items = [
                {
                    "type": "function_call",
                    "id": f"fc_{number}_{i}",
                    "call_id": f"call_{number}_{i}",
                    "name": name,
                    "arguments": json.dumps(args),
                    "status": "completed",
                }
                for i, (name, args) in enumerate(turn)
            ]
        events: list[tuple[str | None, Any]] = [
            (
                "response.created",
                {
                    "type": "response.created",
                    "response": {"id": response_id, "status": "in_progress"},
                },
            )
        ]
        for i, item in enumerate(items):
            events.append(
                (
                    "response.output_item.added",
                    {"type": "response.output_item.added", "output_index": i, "item": item},
                )
            )
            events.append(
                (
                    "response.output_item.done",
                    {"type": "response.output_item.done", "output_index": i, "item": item},
                )
            )
        usage = {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 110,
        }
        events.append(
            (
                "response.completed",
                {
                    "type": "response.completed",
                    "response": {"id": response_id, "status": "completed", "usage": usage},
                },
            )
        )
        handler.send_sse(events)

    # What the model was shown.
    def inputs(self, index: int) -> list[dict[str, Any]]:
        """The `input` items of model call `index`."""
        items = self.requests[index].get("input")
        return items if isinstance(items, list) else []

    def function_call_outputs(self, index: int) -> dict[str, str]:
        """call_id → the output text the model saw for it in model call `index`."""
        out: dict[str, str] = {}
        for item in self.inputs(index):
            if item.get("type") in ("function_call_output", "custom_tool_call_output"):
                output = item.get("output")
                if not isinstance(output, str):
                    output = json.dumps(output)
                out[str(item.get("call_id"))] = output
        return out

    def tool_names(self, index: int = 0) -> list[str]:
        """The names of the tools offered in model call `index`."""
        names = []
        for tool in self.requests[index].get("tools") or []:
            if isinstance(tool, dict):
                names.append(str(tool.get("name") or tool.get("type")))
        return names
