"""What an outcome means to the loop detectors (engine/outcomes.py), through the Session API."""

from __future__ import annotations

from typing import Any

import pytest

import loopguard
from loopguard.state.history import FAILED, STATUS, UNREAD


def completed(
    tool: str,
    args: Any,
    result: Any = None,
    error: Any = None,
    session: loopguard.Session | None = None,
    rules: dict[str, Any] | None = None,
) -> Any:
    """One call run through a session; its history entry."""
    session = session or loopguard.Guard.from_dict({"version": 1, **(rules or {})}).session("o")
    session.begin_round()
    call_id = f"{tool}{len(session.history())}"
    session.before_call(tool, args, call_id=call_id)
    session.after_call(tool, args, result=result, error=error, call_id=call_id)
    return session.history()[-1]


@pytest.mark.parametrize(
    ("result", "flags"),
    [
        ("Error: flight HAT030 not available", FAILED),  # a prefix, after leading punctuation too
        ('{"error": "bad request"}', FAILED),  # an API's error object
        ('{"error": null, "result": 5}', 0),  # ... but not an empty error field
        ("errors: 0, warnings: 2", 0),  # the prefix is a whole word
        ("  [Error] payment declined", FAILED),
        ("/bin/bash: line 7: javac: command not found", FAILED),
        ("EXECUTION TIMED OUT", FAILED),
        ("3 failed, 2 passed", 0),  # a test run reporting failures is not a failed call
        ("Traceback (most recent call last):\nAssertionError", 0),
        ("job 7: running (step 3 of 9)", STATUS),
        ("progress: 40 %", STATUS),
        ("see metadata and beta docs", 0),  # markers match whole words only: not `eta`
        ("half an emoji \ud83d then: command not found", FAILED),  # a lone surrogate never crashes
    ],
)
def test_results_are_read_as_failures_statuses_or_neither(result: str, flags: int) -> None:
    session = loopguard.Guard.default().session("r")
    first = completed("bash", {"c": 1}, result=result, session=session)
    second = completed("bash", {"c": 1}, result=result, session=session)  # read when it comes round
    assert second.flags == flags and first.flags == flags  # the first one caught up


def test_a_first_occurrence_is_read_only_when_the_call_comes_round() -> None:
    session = loopguard.Guard.default().session("u")
    once = completed("bash", {"c": 1}, result="bash: x: command not found", session=session)
    assert once.flags == UNREAD and once.same_as == once.outcome
    # the same failure with another number: the first stays unread, compared by its exact
    # outcome (a failing chain whose first two texts differ is seen one call later)
    a = completed("javac", {}, result="line 12: javac: command not found", session=session)
    b = completed("javac", {}, result="line 13: javac: command not found", session=session)
    c = completed("javac", {}, result="line 14: javac: command not found", session=session)
    assert (
        a.flags == UNREAD and b.flags == c.flags == FAILED and b.same_as == c.same_as != a.same_as
    )


def test_an_error_reported_by_the_host_is_a_failure_compared_digit_blind() -> None:
    session = loopguard.Guard.default().session("e")  # host errors are read at once
    a = completed("build", {}, error="line 36191: missing header", session=session)
    b = completed("build", {}, error="line 36254: missing header", session=session)
    assert a.flags == b.flags == FAILED and a.outcome != b.outcome and a.same_as == b.same_as


def test_a_tool_whose_name_says_it_polls_is_a_status() -> None:
    assert completed("get_job_status", {"id": 1}, result="ok").flags == STATUS
    assert (
        completed("get_job", {"id": 1}, result="ok").flags == UNREAD
    )  # not a poll: read if it comes round


def test_near_equal_results_of_back_to_back_repeats_share_a_shape() -> None:
    session = loopguard.Guard.default().session("n")
    block = "line a\nline b\nline c\nline d\nline e\n"
    first = completed("view", {"p": 1}, result="[12 lines]\n" + block, session=session)
    second = completed(
        "view", {"p": 1}, result="[13 lines]\n" + block + "line f\n", session=session
    )
    assert first.outcome != second.outcome and second.same_as == first.same_as


def test_near_equality_needs_back_to_back_calls_and_can_be_switched_off() -> None:
    session = loopguard.Guard.default().session("n2")
    first = completed("view", {"p": 1}, result="[12 lines]\nx\ny\nz", session=session)
    completed("other", {}, result="-", session=session)
    third = completed("view", {"p": 1}, result="[13 lines]\nx\ny\nz", session=session)
    assert third.same_as != first.same_as
    off = loopguard.Guard.from_dict({"version": 1, "outcomes": {"near_similarity": 0}}).session(
        "n3"
    )
    a = completed("view", {"p": 1}, result="[12 lines]\nx\ny\nz", session=off)
    b = completed("view", {"p": 1}, result="[13 lines]\nx\ny\nz", session=off)
    assert a.same_as != b.same_as


def test_markers_and_prefixes_come_from_the_rules() -> None:
    rules = {
        "version": 1,
        "outcomes": {
            "failure_markers": ["kaput"],
            "failure_prefixes": ["oops"],
            "status_markers": [],
        },
    }
    for result, flags in (
        ("it went kaput", FAILED),
        ("Oops, wrong id", FAILED),
        ("command not found", 0),
        ("running", 0),
    ):
        session = loopguard.Guard.from_dict(rules).session("m")
        completed("t", {}, result=result, session=session)
        assert completed("t", {}, result=result, session=session).flags == flags


def test_the_seen_lately_list_stays_short_whatever_the_history_size() -> None:
    from loopguard.state.history import RECENT

    guard = loopguard.Guard.from_dict({"version": 1, "loop_detection": {"history_size": 3000}})
    session = guard.session("long")
    for i in range(500):
        completed("read", {"i": i}, result="x", session=session)
    state = session._state
    assert len(state.history) == 500 and len(state.digests) == RECENT
    assert state.digests == [e.digest for e in list(state.history)[-RECENT:]]
