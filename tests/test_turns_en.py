"""The English pack (builtin:portfolio-en) through the real Guard and the runtime."""

from __future__ import annotations

from typing import Any

import pytest
from fakes import Portfolio, ScriptedModel, calls, say

import loopguard
from loopguard.runtime.loop import run_turn

GUARD = loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio-en"]})
HOLDINGS = {"role": "assistant", "content": "Your holdings: AAPL 10 shares, cost basis 150."}
OFFER = {"role": "assistant", "content": "Your holdings are above. Want me to analyze them?"}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def rule_of(messages: list[dict[str, Any]], guard: Any = GUARD) -> str | None:
    exp = guard.session("en").begin_turn(messages)
    return exp.rule if exp else None


@pytest.mark.parametrize(
    ("messages", "rule"),
    [
        ([user("What do I hold right now?")], "portfolio_view_en"),
        ([user("Can you CHECK MY PORTFOLIO?")], "portfolio_diagnose_en"),
        ([user("Show my portfolio, then check my portfolio")], "portfolio_view_en"),
        ([HOLDINGS, user("run a health check")], "portfolio_followup_en"),
        ([HOLDINGS, user("what is the outlook for these stocks")], "portfolio_followup_en"),
        ([OFFER, user("Sure")], "portfolio_affirmative_en"),
        ([user("帮我看看持仓")], "portfolio_diagnose"),  # the Chinese triggers stay
    ],
)
def test_english_triggers(messages: list[dict[str, Any]], rule: str) -> None:
    assert rule_of(messages) == rule


@pytest.mark.parametrize(
    "messages",
    [
        [HOLDINGS, user("analyze Tesla for me")],  # a hint without a referential word
        [
            {"role": "assistant", "content": "Want me to analyze the market?"},
            user("Sure"),
        ],  # no marker
        [HOLDINGS, *[user(str(i)) for i in range(5)], user("run a health check")],  # marker too far
        [
            user(
                "<relevant-memories>user holdings need a health check</relevant-memories>"
                "<current-user-message>what's the weather?</current-user-message>"
            )
        ],
        [OFFER, user("Sure, but first the weather")],  # affirmative must be the whole text
    ],
)
def test_english_near_misses(messages: list[dict[str, Any]]) -> None:
    assert rule_of(messages) is None


def test_punctuation_folding_lets_a_bare_yes_with_a_full_stop_count() -> None:
    folded = loopguard.Guard.from_dict(
        {
            "version": 1,
            "extends": ["builtin:portfolio-en"],
            "turn": {"normalize": ["strip", "lower", "fold_punctuation"]},
        }
    )
    assert rule_of([OFFER, user("Yes.")]) is None
    assert rule_of([OFFER, user("Yes.")], folded) == "portfolio_affirmative_en"


def test_english_retries_and_warning_through_the_runtime() -> None:
    model = ScriptedModel(
        [
            say("You hold some stocks."),
            say("My plan: look first, then summarise."),
            say("Mostly tech."),
        ]
    )
    result = run_turn(
        model, {"portfolio": Portfolio()}, [user("What do I own?")], GUARD.session("r")
    )
    first_retry = model.requests[1][0][-1]["content"]
    assert first_retry.startswith("You answered without calling the tool")
    assert first_retry.endswith('Call the tool now: portfolio(mode="view")')
    assert "real portfolio data" in first_retry
    assert model.requests[2][0][-1]["content"].startswith("You only described a plan")
    assert result.text.startswith("⚠ The required tool portfolio was not called after 2 retries")
    assert result.text.endswith("Mostly tech.")


def test_english_view_call_satisfies_the_view_requirement() -> None:
    portfolio = Portfolio()
    model = ScriptedModel([calls(("portfolio", {"mode": "view"})), say("AAPL and MSFT.")])
    result = run_turn(
        model, {"portfolio": portfolio}, [user("list my holdings")], GUARD.session("v")
    )
    assert (result.text, model.calls, portfolio.calls) == ("AAPL and MSFT.", 2, [{"mode": "view"}])
