"""CallGuard, the SDK-free half of `loopguard mcp-proxy`, on the JSON-RPC dicts it is given."""

from __future__ import annotations

import json

from loopguard.integrations._core import GuardCore
from loopguard.mcp.calls import CallGuard
from loopguard.session.guard import Guard

FAILED = {"content": [{"type": "text", "text": "Error: permission denied"}], "isError": True}
CALL = {"name": "deploy", "arguments": {"target": "prod"}}


def calls() -> tuple[CallGuard, list[str]]:
    reported: list[str] = []
    return CallGuard(GuardCore(Guard.default()), "s", reported.append), reported


def test_a_json_rpc_error_counts_as_a_failure_of_the_call() -> None:
    guard, reported = calls()
    error = {"code": -32602, "message": "Unknown tool: deploy"}
    for request_id in (1, 2):
        assert guard.request(request_id, CALL) is None
        assert guard.is_open(request_id)
        assert guard.response(request_id, error=error) == []
        assert not guard.is_open(request_id)
    blocked = guard.request(3, CALL)
    assert blocked is not None and json.loads(blocked)["status"] == "blocked"
    assert not guard.is_open(3) and reported == []


def test_a_cancelled_call_is_no_longer_awaited() -> None:
    """A server may still answer a call the client cancelled; that answer records nothing:
    two failures answered after their cancellation do not make a third call a repeat."""
    guard, _ = calls()
    for request_id in (1, 2):
        guard.request(request_id, CALL)
        guard.cancelled(request_id)
        assert not guard.is_open(request_id)
        assert guard.response(request_id, result=FAILED) == []
    assert guard.request(3, CALL) is None


def test_requests_it_cannot_read_are_left_to_the_server() -> None:
    guard, reported = calls()
    assert guard.request(1, None) is None
    assert guard.request(2, {"arguments": {}}) is None
    assert not guard.is_open(1) and not guard.is_open(2)
    assert guard.response(7, result=FAILED) == []  # not a call it forwarded
    assert reported == []
