"""A required tool the agent does not offer is no requirement (issue 9), through the Session API.

`session.begin_turn(messages, tools=names)`: when the names are given and the required tool
is not among them, the turn has no expectation, so no retry and no warning prefix. Without
`tools` (replay, hosts that do not say) every tool counts as offered.
"""

from __future__ import annotations

from typing import Any

import pytest

import loopguard

GUARD = loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]})
ASK = [{"role": "user", "content": "帮我看看持仓"}]


@pytest.mark.parametrize("tools", [[], ["read_file", "search"], {"search": None}, ("Portfolio",)])
def test_not_offered_means_no_expectation_no_retry_no_prefix(tools: Any) -> None:
    session = GUARD.session("s")
    assert session.begin_turn(ASK, tools=tools) is None and session.expectation is None
    for _ in range(3):
        outcome = session.finish_round("你的持仓不错")
        assert (outcome.action, outcome.text, outcome.retries) == ("finish", "你的持仓不错", 0)
        assert outcome.message is None and not outcome.exhausted


@pytest.mark.parametrize("tools", [None, ["portfolio"], {"portfolio": None, "search": None}])
def test_offered_or_unknown_keeps_the_requirement(tools: Any) -> None:
    session = GUARD.session("s")
    exp = session.begin_turn(ASK, tools=tools)
    assert exp is not None and exp.call == 'portfolio(mode="diagnose")'
    assert session.finish_round("你的持仓不错").action == "retry"


def test_the_next_turn_asks_again() -> None:
    session = GUARD.session("s")
    assert session.begin_turn(ASK, tools=["search"]) is None
    assert session.begin_turn(ASK, tools=["portfolio"]) is not None
    assert session.begin_turn(ASK, tools=["search"]) is None


@pytest.mark.parametrize("tools", [42, object(), b"portfolio", [None, 3]])
def test_odd_tool_lists_never_raise(tools: Any) -> None:
    session = GUARD.session("s")
    session.begin_turn(ASK, tools=tools)
    assert session.finish_round("好").action in ("retry", "finish")
