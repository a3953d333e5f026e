"""The public texts of `loopguard.session.answers`, the aborted answer of a closed batch, and
`run_turn` reading OpenAI SDK reply objects (or refusing what it cannot read)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fakes import calls

import loopguard
from loopguard.runtime.loop import run_turn
from loopguard.session import answers

USER = [{"role": "user", "content": "read the file"}]


def looped(session: loopguard.Session, times: int) -> list[loopguard.Decision]:
    """`times` rounds of the same call, each answered with the same result."""
    out = []
    for i in range(times):
        session.begin_round()
        decision = session.before_call("read", {"p": 1}, call_id=f"r{i}")
        if not decision.blocked:
            session.after_call("read", {"p": 1}, result="same", call_id=f"r{i}")
        out.append(decision)
    return out


def test_the_rest_of_a_batch_closed_by_a_breaker_is_aborted_and_not_recorded() -> None:
    session = loopguard.Guard.default().session("s")
    session.begin_turn(USER)
    looped(session, 3)
    session.begin_round()
    breaker = session.before_call("read", {"p": 1}, call_id="b")
    assert breaker.action == "breaker" and not answers.is_aborted(breaker)
    recorded = len(session.history())
    rest = session.before_call("write", {"x": 1}, call_id="w")
    assert rest.action == "breaker" and answers.is_aborted(rest) and rest.call_id == "w"
    assert len(session.history()) == recorded
    body = json.loads(answers.tool_result(rest) or "")
    assert body == {"status": "aborted", "message": rest.message}
    assert "tripped the loop breaker" in (rest.message or "")
    # a later batch of the same (closed) turn gets ordinary decisions again
    session.begin_round()
    assert session.before_call("write", {"x": 2}, call_id="w2").action == "allow"


def test_aborted_text_follows_the_rules_messages_and_language() -> None:
    guard = loopguard.Guard.from_dict(
        {"version": 1, "messages": {"en": {"aborted": "closed, sorry"}}}
    )
    session = guard.session("s")
    session.begin_turn(USER)
    looped(session, 3)
    session.begin_round()
    session.before_call("read", {"p": 1})
    assert session.before_call("x").message == "closed, sorry"
    zh = loopguard.Guard.default().session("z")
    zh.begin_turn([{"role": "user", "content": "读一下文件"}])
    looped(zh, 3)
    zh.begin_round()
    zh.before_call("read", {"p": 1})
    assert loopguard.text.messages.has_han(zh.before_call("x").message or "")


def test_without_a_batch_calls_are_never_aborted() -> None:
    session = loopguard.Guard.default().session("s")
    session.begin_turn(USER)
    for i in range(4):
        d = session.before_call("read", {"p": 1}, call_id=f"c{i}")
        if not d.blocked:
            session.after_call("read", {"p": 1}, result="same", call_id=f"c{i}")
    assert session.tools_closed
    assert not answers.is_aborted(session.before_call("other"))


def test_tool_result_note_and_stop_texts() -> None:
    session = loopguard.Guard.default().session("s")
    session.begin_turn(USER)
    allow, _, critical, breaker = looped(session, 4)
    assert answers.tool_result(allow) is None and not answers.note_shown(allow)
    blocked = json.loads(answers.tool_result(critical) or "")
    assert blocked["status"] == "blocked" and blocked["detector"] == "doom_loop_exact"
    assert blocked["count"] == 3 and blocked["message"] == critical.message
    assert json.loads(answers.tool_result(breaker) or "")["status"] == "error"
    assert answers.note_shown(breaker)
    assert answers.with_notes("ok", [allow, breaker]) == f"ok\n\n{breaker.message}"
    assert answers.stop_text(None, breaker) == breaker.message
    assert answers.stop_text("  partial ", breaker) == f"partial\n\n{breaker.message}"
    assert answers.error_text(ValueError("bad")) == "ValueError: bad"
    assert json.loads(answers.error_result("boom")) == {"status": "error", "error": "boom"}


def test_run_turn_aborts_the_rest_of_a_breaker_batch_through_before_call() -> None:
    session = loopguard.Guard.default().session("s")
    seen: list[str] = []
    tools = {"read": lambda a: "same", "write": lambda a: seen.append("write") or "ok"}
    rounds = [calls(("read", {"p": 1}))] * 3 + [
        calls(("read", {"p": 1}), ("write", {}), ("write", {"y": 1}))
    ]
    replies = iter(rounds + [{"role": "assistant", "content": "gave up"}])
    result = run_turn(lambda m, tools_enabled=True: next(replies), tools, USER, session)
    tool_msgs = [m for m in result.messages if m["role"] == "tool"]
    assert [json.loads(m["content"].split("\n\n")[0])["status"] for m in tool_msgs[-2:]] == [
        "aborted"
    ] * 2
    assert seen == []


class _FakeSdkMessage:
    """Shaped like openai.types.chat.ChatCompletionMessage (a pydantic model)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def model_dump(self, exclude_none: bool = False) -> dict[str, Any]:
        return {k: v for k, v in self.data.items() if v is not None or not exclude_none}


def test_run_turn_reads_openai_sdk_message_objects() -> None:
    from openai.types.chat import ChatCompletion, ChatCompletionMessage

    call = calls(("read", {"p": 1}), ids=["c1"])
    first = ChatCompletionMessage.model_validate(call)
    final = ChatCompletion.model_validate(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "done"},
                }
            ],
        }
    )
    replies = iter([first, final])
    result = run_turn(
        lambda m, tools_enabled=True: next(replies),
        {"read": lambda a: "text"},
        USER,
        loopguard.Guard.default().session("s"),
    )
    assert result.text == "done"
    assert result.messages[0]["tool_calls"][0]["id"] == "c1"
    assert result.messages[1] == {"role": "tool", "tool_call_id": "c1", "content": "text"}
    plain = run_turn(
        lambda m, tools_enabled=True: _FakeSdkMessage(
            {"role": "assistant", "content": "hi", "refusal": None}
        ),
        {},
        USER,
        loopguard.Guard.default().session("t"),
    )
    assert plain.text == "hi"


def test_run_turn_refuses_a_reply_it_cannot_read() -> None:
    with pytest.raises(TypeError, match="the model returned int: expected a str"):
        run_turn(lambda m, tools_enabled=True: 42, {}, USER, loopguard.Guard.default().session("s"))


def test_a_shared_store_session_aborts_the_rest_of_the_batch_too(tmp_path: Any) -> None:
    from loopguard.stores import SqliteStore

    guard = loopguard.Guard.from_dict({"version": 1}, store=SqliteStore(tmp_path / "state.db"))
    session = guard.session("s")
    session.begin_turn(USER)
    looped(session, 3)
    session.begin_round()
    assert session.before_call("read", {"p": 1}, call_id="b").action == "breaker"
    again = guard.session("s")  # a fresh handle reads the stored state
    assert answers.is_aborted(again.before_call("write", {"x": 1}, call_id="w"))
