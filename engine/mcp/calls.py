"""Guarding the `tools/call` requests of one MCP connection, on plain JSON-RPC dicts.

The proxy hands every `tools/call` request here before forwarding it, and the server's
answer to it after. A call the guard blocks is answered by the proxy; every other call
goes to the server, and its result comes back with the guard's note appended when the
guard wants it shown (`answers.note_shown`).

Rounds: MCP has no "model response" boundary, so calls in flight at the same time are
one round (a call arriving while others are still running joins their round) and any
other call is a round of its own.

Fail open: any exception inside loopguard for one call is reported through `report`
and the call goes on as if the guard were not there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from loopguard.integrations._core import GuardCore
from loopguard.session import answers
from loopguard.text.hints import error_text, safe_str

INPUT_REQUIRED = "input_required"  # a 2026-07-28 result: the call resumes in a later request


@dataclass(frozen=True)
class OpenCall:
    """A forwarded call awaiting the server's answer."""

    tool: str
    args: Any
    call_id: str  # the id the guard knows the call by: its first request's id


class CallGuard:
    """One proxy connection's guarded calls: one session, its rounds and open calls."""

    def __init__(self, core: GuardCore, session_id: str, report: Callable[[str], None]) -> None:
        self.core = core
        self.session_id = session_id
        self._report = report
        self._open: dict[str, OpenCall] = {}
        self._paused: dict[str, str] = {}  # tool + arguments -> call id, for input_required
        self._in_flight = 0

    # -- the client's requests ------------------------------------------------
    def request(self, request_id: Any, params: Any) -> str | None:
        """A `tools/call` request: the guard's answer text when it must not be forwarded."""
        if not isinstance(params, Mapping) or not isinstance(params.get("name"), str):
            return None  # not a call the guard can read: the server answers it
        tool, args, key = params["name"], params.get("arguments"), _key(request_id)
        resumed = self._resumed(tool, args, params)
        self._start(tool)
        if resumed is None:
            try:
                decision = self.core.before(self.session_id, tool, args, key)
            except Exception as exc:  # noqa: BLE001 — fail open: the call is forwarded
                self._fault(tool, exc)
            else:
                if decision.blocked:
                    self._finish(tool)
                    return answers.tool_result(decision) or ""
        self._open[key] = OpenCall(tool, args, resumed or key)
        return None

    def cancelled(self, request_id: Any) -> None:
        """The client cancelled a request: a call it names is no longer in flight.

        The server may never answer a cancelled request, so the call stays unanswered in
        the session (nothing is known of its outcome).
        """
        call = self._open.pop(_key(request_id), None)
        if call is not None:
            self._finish(call.tool)

    # -- the server's answers -------------------------------------------------
    def is_open(self, request_id: Any) -> bool:
        return _key(request_id) in self._open

    def response(self, request_id: Any, result: Any = None, error: Any = None) -> list[str]:
        """The server answered a forwarded call: record it; the notes to append to it."""
        call = self._open.pop(_key(request_id), None)
        if call is None:
            return []
        self._finish(call.tool)
        if isinstance(result, Mapping) and result.get("resultType") == INPUT_REQUIRED:
            self._paused[_args_key(call.tool, call.args)] = call.call_id
            return []  # not finished: the client retries it with the input it asked for
        if error is not None:
            outcome = {"error": _error_message(error)}
        elif isinstance(result, Mapping) and result.get("isError"):
            outcome = {"error": _content_text(result) or "the tool reported an error"}
        else:
            outcome = {"result": _content_view(result)}
        try:
            decisions = self.core.after(
                self.session_id, call.tool, call.args, call.call_id, **outcome
            )
        except Exception as exc:  # noqa: BLE001 — fail open: the answer goes back unchanged
            self._fault(call.tool, exc)
            return []
        if error is not None:
            return []  # a JSON-RPC error has no content to append a note to
        return [d.message for d in decisions if answers.note_shown(d) and d.message]

    # -- rounds -----------------------------------------------------------------
    def _start(self, tool: str) -> None:
        if self._in_flight == 0:
            self._guarded(tool, self.core.begin_round, self.session_id)
        self._in_flight += 1

    def _finish(self, tool: str) -> None:
        self._in_flight = max(0, self._in_flight - 1)
        if self._in_flight == 0:
            self._guarded(tool, lambda sid: self.core.session(sid).end_round(), self.session_id)

    def _resumed(self, tool: str, args: Any, params: Mapping[str, Any]) -> str | None:
        """The call id of the paused call a retry with `inputResponses` resumes, if any."""
        if "inputResponses" not in params and "requestState" not in params:
            return None
        return self._paused.pop(_args_key(tool, args), None)

    def _guarded(self, tool: str, step: Callable[[str], Any], session_id: str) -> None:
        try:
            step(session_id)
        except Exception as exc:  # noqa: BLE001 — fail open
            self._fault(tool, exc)

    def _fault(self, tool: str, exc: BaseException) -> None:
        self._report(
            f"guard failed on a call of {tool!r} ({error_text(exc)}); it went on unguarded"
        )


def _key(request_id: Any) -> str:
    return safe_str(request_id)


def _args_key(tool: str, args: Any) -> str:
    try:
        return tool + "\0" + json.dumps(args, sort_keys=True, default=str)
    except (TypeError, ValueError):  # pragma: no cover — parsed JSON always dumps
        return tool + "\0" + safe_str(args)


def _texts(result: Mapping[str, Any]) -> tuple[list[Any], list[str]]:
    content = result.get("content")
    blocks = content if isinstance(content, list) else []
    texts = [
        b["text"]
        for b in blocks
        if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    return blocks, texts


def _content_view(result: Any) -> Any:
    """A result as the model sees it: its text when all of it is text, else its content."""
    if not isinstance(result, Mapping) or not isinstance(result.get("content"), list):
        return result  # not a CallToolResult (e.g. a task handle): recorded as it came
    blocks, texts = _texts(result)
    return "\n".join(texts) if len(texts) == len(blocks) else blocks


def _content_text(result: Mapping[str, Any]) -> str:
    return "\n".join(_texts(result)[1])


def _error_message(error: Any) -> str:
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return error["message"] or "error"
    return safe_str(error)
