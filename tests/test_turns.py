"""Required tools per turn with builtin:portfolio: triggers, near misses, retries."""

from __future__ import annotations

from typing import Any

import pytest

from loopguard.config.layers import load
from loopguard.errors import RulesError
from loopguard.policy.turns import TurnPolicy, offered_names
from loopguard.session.guard import Guard
from loopguard.text.content import content_text, strip_recall

DEFAULT = load({"version": 1}, "mapping").data
CONFIG = load({"version": 1, "extends": ["builtin:portfolio"]}, "mapping").data
POLICY = TurnPolicy.from_config(CONFIG)
MEMORIES = "<relevant-memories>用户的持仓很健康，上次体检过</relevant-memories>"


def user(text: Any) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def recalled(question: str) -> dict[str, Any]:
    return user(f"{MEMORIES}\n<current-user-message>{question}</current-user-message>")


def rule_of(messages: list[dict[str, Any]]) -> str | None:
    exp = POLICY.expectation_for(messages)
    return exp.rule if exp else None


PORTFOLIO_TABLE = assistant("你的持仓：\n代码 | 名称 | 持股\n600000 | 浦发银行 | 100")


@pytest.mark.parametrize(
    ("messages", "rule"),
    [
        ([user("我有什么持仓？")], "portfolio_view"),
        ([user("帮我看看持仓")], "portfolio_diagnose"),
        ([PORTFOLIO_TABLE, user("做个体检")], "portfolio_followup"),
        ([PORTFOLIO_TABLE, user("这几只未来走势怎么样")], "portfolio_followup"),
        (
            [PORTFOLIO_TABLE, assistant("要不要我帮你分析一下？"), user("好的")],
            "portfolio_affirmative",
        ),
        ([user("我有什么持仓，顺便帮我看看持仓")], "portfolio_view"),  # view beats diagnose
        ([PORTFOLIO_TABLE, recalled("做一下体检")], "portfolio_followup"),
    ],
)
def test_each_trigger_fires_on_its_example(messages: list[dict[str, Any]], rule: str) -> None:
    assert rule_of(messages) == rule


@pytest.mark.parametrize(
    "messages",
    [
        [PORTFOLIO_TABLE, user("分析一下海德股份")],  # a hint without a referential word
        [PORTFOLIO_TABLE, user("走势")],  # a generic hint alone
        [assistant("要不要我帮你分析一下走势？"), user("好的")],  # affirmative, no marker
        [
            PORTFOLIO_TABLE,
            assistant("a"),
            user("b"),
            assistant("c"),
            user("d"),
            assistant("e"),
            user("做个体检"),
        ],  # the marker is six messages back
        [recalled("今天天气怎么样")],  # memories mention 持仓 and 健康
        [recalled("今天天气怎么样"), assistant("晴"), recalled("做一下体检")],  # ...also in context
        [PORTFOLIO_TABLE, user("好的，不过先讲讲大盘")],  # affirmative must be the whole text
        [user("做个体检")],  # follow-up without portfolio context
    ],
)
def test_near_misses_require_nothing(messages: list[dict[str, Any]]) -> None:
    assert rule_of(messages) is None


def test_diagnose_requires_the_diagnose_mode() -> None:
    exp = POLICY.expectation_for([user("帮我看看持仓")])
    assert exp is not None and (exp.tool, exp.args) == ("portfolio", {"mode": "diagnose"})
    assert exp.call == 'portfolio(mode="diagnose")'


def test_context_is_the_last_four_before_the_last_message_of_any_role() -> None:
    tool_result = {"role": "tool", "tool_call_id": "c1", "content": '{"持股": 100}'}
    assert (
        rule_of([tool_result, user("a"), assistant("b"), user("体检一下")]) == "portfolio_followup"
    )
    # the user message need not be last; its own text is then inside the context window
    assert rule_of([user("我买了啥"), assistant("稍等")]) == "portfolio_view"


def test_content_shapes() -> None:
    parts = [
        {"type": "text", "text": "我有什么"},
        {"type": "image_url", "image_url": {}},
        {"type": "text", "text": "持仓"},
    ]
    assert content_text(user(parts)) == "我有什么持仓"
    assert rule_of([user(parts)]) == "portfolio_view"
    assert content_text(user({"text": "持仓情况"})) == ""
    assert content_text("not a message") == ""
    # a blank newest user message is skipped in favour of the previous one
    assert (
        rule_of([user("持仓情况"), assistant("..."), user("   "), user(None)]) == "portfolio_view"
    )


def test_recall_stripping_keeps_only_the_last_current_section() -> None:
    text = (
        "<current-user-message>旧</current-user-message>"
        "x<current-user-message>新</current-user-message>"
    )
    assert strip_recall(text, "current-user-message", "relevant-memories") == "新"
    assert strip_recall(f"问题{MEMORIES}", "current-user-message", "relevant-memories") == "问题"
    assert (
        strip_recall("问<relevant-memories>持仓", "current-user-message", "relevant-memories")
        == "问"
    )


def _turn(text: str) -> Any:
    state = POLICY.new_state()
    POLICY.begin_turn(state, [user(text)])
    return state


def test_only_a_call_that_ran_with_equal_arguments_satisfies() -> None:
    state = _turn("帮我看看持仓")
    assert not POLICY.observe_call(state, "portfolio", {"mode": "view"}, ran=True)
    assert not POLICY.observe_call(state, "portfolio", {"mode": "diagnose"}, ran=False)
    assert not POLICY.observe_call(state, "portfolio", '{"mode": "diagnose"}', ran=True)
    assert POLICY.observe_call(state, "portfolio", {"mode": "diagnose", "x": 1}, ran=True)
    assert POLICY.finish_round(state, "好").action == "finish"


def test_retry_messages_name_the_problem_reason_and_call() -> None:
    state = _turn("帮我看看持仓")
    plan = POLICY.finish_round(state, "计划：1. 先读取持仓 2. 再分析")
    assert (plan.action, plan.problem, plan.retries) == ("retry", "plan_only", 1)
    assert plan.message.startswith(CONFIG["messages"]["zh"]["retry_plan_only"])
    assert "必须基于真实持仓数据" in plan.message and 'portfolio(mode="diagnose")' in plan.message
    empty = POLICY.finish_round(state, None)
    assert (empty.action, empty.problem, empty.retries) == ("retry", "no_output", 2)
    last = POLICY.finish_round(state, "你的持仓不错")
    assert (last.action, last.problem, last.exhausted) == ("finish", "text_only", True)
    assert last.text.startswith("⚠") and "portfolio" in last.text and "2" in last.text
    assert last.text.endswith("你的持仓不错")


def test_no_requirement_finishes_with_the_text_unchanged() -> None:
    state = _turn("今天天气怎么样")
    outcome = POLICY.finish_round(state, "晴")
    assert (outcome.action, outcome.text, outcome.message) == ("finish", "晴", None)


def test_english_user_gets_english_retry_text() -> None:
    config = dict(CONFIG, keyword_sets=dict(CONFIG["keyword_sets"], portfolio_view=["my holdings"]))
    policy = TurnPolicy.from_config(config)
    state = policy.new_state()
    policy.begin_turn(state, [user("Show MY HOLDINGS")])
    outcome = policy.finish_round(state, "First I will check, then summarise. 1. list")
    assert outcome.problem == "plan_only"
    assert outcome.message.startswith("You only described a plan")
    assert outcome.message.endswith('Call the tool now: portfolio(mode="view")')


def test_a_breaker_closes_tools_and_a_retry_reopens_them() -> None:
    session = Guard.from_dict({"version": 1, "extends": ["builtin:portfolio"]}).session("b")
    session.begin_turn([user("帮我看看持仓")])
    actions = []
    for i in range(6):
        actions.append(session.before_call("search", {"q": "持仓"}, call_id=str(i)).action)
        if actions[-1] == "breaker":
            break
        session.after_call("search", {"q": "持仓"}, result="none", call_id=str(i))
    assert actions[-1] == "breaker" and session.tools_closed
    assert session.finish_round("").action == "retry"
    assert not session.tools_closed  # the retry asks for a call, so tools are offered again


def test_zero_retries_finishes_with_the_warning_at_once() -> None:
    policy = TurnPolicy.from_config(
        dict(CONFIG, turn=dict(CONFIG["turn"], max_incomplete_tool_retries=0))
    )
    state = policy.new_state()
    policy.begin_turn(state, [user("帮我看看持仓")])
    outcome = policy.finish_round(state, "好")
    assert outcome.exhausted and outcome.retries == 0


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (
            {"intents": [{"id": "x", "when": {"text_contains": "nope"}, "require": {"tool": "t"}}]},
            "intents[x].when.text_contains",
        ),
        ({"intents": [{"id": "x", "when": {"text_contains": "followup"}}]}, "intents[x].require"),
        ({"intents": ["x"]}, "intents[0]"),
        ({"turn": {"max_tool_rounds": -1}}, "turn.max_tool_rounds"),
    ],
)
def test_bad_rules_are_rules_errors(change: dict[str, Any], path: str) -> None:
    with pytest.raises(RulesError) as caught:
        TurnPolicy.from_config(dict(CONFIG, **change))
    assert caught.value.findings[0].path == path


def test_the_default_rules_have_no_intents() -> None:
    assert DEFAULT["intents"] == []
    policy = TurnPolicy.from_config(DEFAULT)
    assert policy.intents == () and policy.plan_condition is not None
    assert policy.expectation_for([user("帮我看看持仓")]) is None


def test_the_portfolio_pack_adds_the_four_triggers_in_order_over_the_default() -> None:
    assert [i.id for i in POLICY.intents] == [
        "portfolio_view",
        "portfolio_diagnose",
        "portfolio_followup",
        "portfolio_affirmative",
    ]
    for key in ("turn", "messages", "loop_detection"):
        assert CONFIG[key] == DEFAULT[key]
    assert {"plan_marker", "step_token", "step_word"} <= set(CONFIG["keyword_sets"])


@pytest.mark.parametrize("tools", [["read_file"], (), {"search": print}, "read_file", iter(["x"])])
def test_a_required_tool_not_offered_is_no_requirement(tools: Any) -> None:
    state = POLICY.new_state()
    assert POLICY.begin_turn(state, [user("帮我看看持仓")], tools) is None
    outcome = POLICY.finish_round(state, "你的持仓不错")
    assert (outcome.action, outcome.text, outcome.retries) == ("finish", "你的持仓不错", 0)


@pytest.mark.parametrize(
    "tools", [None, ["portfolio", "read_file"], {"portfolio": print}, "portfolio", 42, b"portfolio"]
)
def test_an_offered_or_unknown_tool_set_keeps_the_requirement(tools: Any) -> None:
    state = POLICY.new_state()
    exp = POLICY.begin_turn(state, [user("帮我看看持仓")], tools)
    assert exp is not None and exp.tool == "portfolio"


def test_offered_names_reads_names_and_ignores_the_rest() -> None:
    assert offered_names(["a", 1, None, "b"]) == {"a", "b"}
    assert offered_names({"a": 1}) == {"a"} and offered_names("a") == {"a"}
    assert offered_names(None) is None and offered_names(3.5) is None
