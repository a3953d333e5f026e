"""User regexes and message templates from rules (issue #10).

They are bounded at load time and safe at run time.
"""

from __future__ import annotations

import pytest

import loopguard
from loopguard.config.layers import load
from loopguard.errors import RulesError
from loopguard.lint.linter import lint_bytes

BOMB = "(?:(?:(?:a{1000}){1000}){1000})"
REDOS = "^(a|a)*$"


def rules_error(text: str) -> RulesError:
    with pytest.raises(RulesError) as info:
        load(text, "text", "r.yaml")
    return info.value


# -- compile bombs -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "where",
    [
        "detectors: {unknown_tool_repeat: {patterns: ['PATTERN']}}",
        "outcomes: {poll_name_pattern: 'PATTERN'}",
        "intents: [{id: i, when: {text_contains: plan_marker}, "
        "require: {tool: t, args: {q: {regex: 'PATTERN'}}}}]",
    ],
)
@pytest.mark.parametrize("pattern", [BOMB, r"\p{L}{1000}{1000}", "(?:ab{1000}){1000}"])
def test_a_compile_bomb_is_a_positioned_error(where: str, pattern: str) -> None:
    error = rules_error("version: 1\n" + where.replace("PATTERN", pattern) + "\n")
    assert [(f.line, f.code) for f in error.findings] == [(2, "regex-too-complex")]
    report = lint_bytes(("version: 1\n" + where.replace("PATTERN", pattern) + "\n").encode())
    assert [f.code for f in report.findings if f.level == "error"] == ["regex-too-complex"]


def test_a_compile_bomb_given_to_the_engine_directly_is_skipped() -> None:
    rules = load("version: 1\nloop_detection: {enabled: true}\n", "text").data
    rules["detectors"]["unknown_tool_repeat"]["patterns"] = [BOMB, "no such tool (?P<name>\\w+)"]
    session = loopguard.Guard(rules).session("s")  # no validation: the detector still refuses it
    session.before_call("x", {})
    session.after_call("x", {}, error="no such tool x")


def test_ordinary_patterns_still_load() -> None:
    data = load(
        "version: 1\ndetectors: {unknown_tool_repeat: {patterns: "
        "['\\d{1,1000}', 'unknown tool: (?P<name>\\S+)', '(?:a{100}){100}']}}\n",
        "text",
    ).data
    assert len(data["detectors"]["unknown_tool_repeat"]["patterns"]) == 3


# -- ReDoS --------------------------------------------------------------------------------
@pytest.mark.parametrize("pattern", ["(a+)+", "^(\\w+\\s?)*$", "(\\w|\\d)+", REDOS])
def test_redos_prone_patterns_get_a_lint_warning(pattern: str) -> None:
    text = (
        f"version: 1\nloop_detection: {{enabled: true}}\n"
        f"detectors: {{unknown_tool_repeat: {{patterns: ['{pattern}']}}}}\n"
        f"outcomes: {{poll_name_pattern: '{pattern}'}}\n"
    )
    text += (
        "intents: [{id: i, when: {text_contains: plan_marker}, require: {tool: t, "
        f"args: {{q: {{regex: '{pattern}'}}}}}}}}]\n"
    )
    found = [(f.line, f.code, f.level) for f in lint_bytes(text.encode()).findings]
    assert found == [(3, "redos", "warning"), (4, "redos", "warning"), (5, "redos", "warning")]


def test_bundled_packs_have_no_redos_warning() -> None:
    from loopguard.lint.linter import lint_path

    for pack in ("builtin:default", "builtin:portfolio", "builtin:portfolio-en"):
        assert not [f for f in lint_path(pack).findings if f.code == "redos"]


def test_many_slow_patterns_share_one_budget_per_call() -> None:
    import regex

    from loopguard.text.regexcheck import CALL_BUDGET_S, Deadline, search

    slow = regex.compile(REDOS)
    deadline = Deadline()
    results = [search(slow, "a" * 40 + "!", deadline) for _ in range(100)]
    assert results == [None] * 100  # every search gave up (time-out = no match) ...
    assert deadline.left() <= 0 < CALL_BUDGET_S  # ... and the budget is spent, not 100 x 50 ms
    assert search(regex.compile("b"), "abc", Deadline(0)) is None  # no time left: no search


def test_unknown_tool_patterns_still_match_under_the_budget() -> None:
    guard = loopguard.Guard.from_dict(
        {
            "version": 1,
            "loop_detection": {
                "enabled": True,
                "unknown_tool_threshold": 2,
                "warning_threshold": 50,
                "critical_threshold": 60,
                "global_circuit_breaker_threshold": 70,
            },
            "detectors": {
                "unknown_tool_repeat": {"patterns": [REDOS] * 20 + ["no tool (?P<name>\\w+)"]}
            },
        }
    )
    session = guard.session("s")
    for i in range(3):
        decision = session.before_call("serach", {"q": i})
        session.after_call("serach", {"q": i}, error="no tool serach")
    assert (
        decision.action == "critical"
        or session.before_call("serach", {"q": 9}).action == "critical"
    )


# -- message templates ------------------------------------------------------------------
BAD_TEMPLATES = {
    "{message:>2000000000}": "format spec",
    "{tool.__class__.__mro__}": "attribute",
    "{message!r}": "conversion",
    "{tool[0]}": "attribute",
    "{rounds}": "unknown field",
    "{nope}": "unknown field",
    "a } b": "lone '}'",
    "{message": "never closed",
    "{0}": "not a field",
}


@pytest.mark.parametrize("template", sorted(BAD_TEMPLATES))
def test_a_bad_template_is_a_load_error_with_position(template: str) -> None:
    text = f"version: 1\nmessages:\n  en:\n    blocked: '{template}'\n"
    error = rules_error(text)
    assert [(f.line, f.col, f.code) for f in error.findings] == [(4, 14, "template")]
    assert BAD_TEMPLATES[template].split()[0] in str(error) or "field" in str(error)


def test_agent_templates_are_checked_too() -> None:
    error = rules_error("version: 1\nagents:\n  ops:\n    messages: {en: {breaker: '{x.y}'}}\n")
    assert (
        error.findings[0].line == 4 and error.findings[0].path == "agents.ops.messages.en.breaker"
    )


def test_templates_fill_known_fields_only() -> None:
    from loopguard.text.messages import fill

    assert fill("{message} {{literal}} {count}", message="m", count=3) == "m {literal} 3"
    assert fill("{message:>2000000000}", message="m") == "{message:>2000000000}"  # as written
    assert fill("{tool.__class__}", tool="t") == "{tool.__class__}"
    assert fill("{unknown} x", message="m") == "{unknown} x"


def test_a_good_template_is_used_in_decisions() -> None:
    guard = loopguard.Guard.from_dict(
        {
            "version": 1,
            "loop_detection": {
                "enabled": True,
                "unknown_tool_threshold": 2,
                "warning_threshold": 50,
                "critical_threshold": 60,
                "global_circuit_breaker_threshold": 70,
            },
            "aggregator": {"escalate_criticals": 0},
            "messages": {"en": {"blocked": "BLOCKED {tool} by {detector}: {message} {{x}}"}},
        }
    )
    session = guard.session("s")
    for i in range(3):
        decision = session.before_call("serach", {"q": i})
        session.after_call("serach", {"q": i}, error="Unknown tool: serach")
    assert decision.action == "critical"
    assert decision.message.startswith("BLOCKED serach by unknown_tool_repeat: ")
    assert decision.message.endswith(" {x}")
