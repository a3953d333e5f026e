"""Required arguments beyond equality: exact, `equals`, `prefix`, `regex` and `any` matchers,
through the Session API and run_turn / arun_turn, and the texts that tell "the tool was not
called" from "the tool was called with other arguments"."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fakes import AsyncScriptedModel, ScriptedModel, calls, say

import loopguard
from loopguard.errors import RulesError
from loopguard.policy.turns import arg_matches
from loopguard.runtime.loop import TurnResult, arun_turn, run_turn
from loopguard.state.turn import format_call
from loopguard.stores.codec import decode, encode
from loopguard.text.messages import render
from loopguard.text.regexcheck import MATCH_TIMEOUT_S


def rules(args: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": 1,
        "keyword_sets": {"tests": ["run the tests", "跑测试"]},
        "intents": [
            {
                "id": "run_tests",
                "when": {"text_contains": "tests"},
                "require": {"tool": "run_shell", "args": args},
                "reason": "Test results must come from a real run.",
            }
        ],
    }


def session(args: dict[str, Any], name: str = "s") -> loopguard.Session:
    return loopguard.Guard.from_dict(rules(args)).session(name)


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def meets(args: dict[str, Any], given: Any) -> bool:
    """Whether one call `run_shell(**given)` satisfies the requirement `args`."""
    s = session(args)
    assert s.begin_turn(user("please run the tests")) is not None
    s.before_call("run_shell", given)
    s.after_call("run_shell", given, result="ok")
    return s.finish_round("done").action == "finish"


@pytest.mark.parametrize(
    ("required", "given", "ok"),
    [
        ({"command": "pytest"}, {"command": "pytest"}, True),  # exact, as before
        ({"command": "pytest"}, {"command": "pytest -q tests/"}, False),
        ({"filter": {"status": "open"}}, {"filter": {"status": "open"}}, True),  # a mapping value
        ({"command": {"prefix": "pytest"}}, {"command": "pytest -q tests/"}, True),
        ({"command": {"prefix": "pytest"}}, {"command": "python -m pytest"}, False),
        ({"command": {"prefix": "1"}}, {"command": 12}, False),  # only strings have prefixes
        (
            {"command": {"regex": r"^(python -m )?pytest\b"}},
            {"command": "python -m pytest -x"},
            True,
        ),
        (
            {"command": {"regex": r"\bpytest\b"}},
            {"command": "cd app && pytest"},
            True,
        ),  # found anywhere
        ({"command": {"regex": r"^pytest$"}}, {"command": "PYTEST"}, False),  # case-sensitive
        ({"command": {"regex": r"(?i)^pytest$"}}, {"command": "PYTEST"}, True),
        ({"command": {"any": True}}, {"command": ""}, True),
        ({"command": {"any": True}}, {"cwd": "/tmp"}, False),  # absent
        ({"opts": {"equals": {"any": True}}}, {"opts": {"any": True}}, True),  # escape hatch
        ({"opts": {"equals": {"any": True}}}, {"opts": 1}, False),
        (
            {"command": {"prefix": "pytest"}, "cwd": "/app"},
            {"command": "pytest", "cwd": "/app"},
            True,
        ),
        (
            {"command": {"prefix": "pytest"}, "cwd": "/app"},
            {"command": "pytest", "cwd": "/"},
            False,
        ),
        ({"command": {"prefix": "pytest"}}, "not a mapping", False),
    ],
)
def test_matchers_through_the_session_api(required: dict[str, Any], given: Any, ok: bool) -> None:
    assert meets(required, given) is ok


def test_a_catastrophic_pattern_times_out_as_no_match() -> None:
    spec = {"regex": r"^(a+)+$"}
    assert arg_matches(spec, True, "a" * 10) is True
    assert MATCH_TIMEOUT_S < 1
    assert arg_matches(spec, True, "a" * 5000 + "!") is False  # backtracking cut by the timeout


def test_the_call_shown_for_a_non_exact_requirement_is_readable() -> None:
    args = {
        "command": {"prefix": "pytest"},
        "path": {"regex": r"^tests/"},
        "env": {"any": True},
        "mode": {"equals": "ci"},
        "n": 2,
    }
    assert format_call("run_shell", args) == (
        'run_shell(command=<text starting with "pytest">, '
        "path=<text matching /^tests//>, env=<any value>, "
        'mode="ci", n=2)'
    )
    assert format_call("portfolio", {"mode": "diagnose"}) == 'portfolio(mode="diagnose")'


def test_the_retry_says_the_tool_was_called_with_other_arguments() -> None:
    s = session({"command": {"prefix": "pytest"}})
    s.begin_turn(user("please run the tests"))
    s.before_call("run_shell", {"command": "make test"})
    s.after_call("run_shell", {"command": "make test"}, result="ok")
    outcome = s.finish_round("All tests pass.")
    assert (outcome.action, outcome.problem) == ("retry", "other_args")
    assert outcome.message == (
        "You called run_shell, but not with the arguments this turn needs, so "
        "the answer is not based on the right data. Test results must come "
        "from a real run. Call the tool now: run_shell(command=<text starting "
        'with "pytest">)'
    )


def test_the_retry_still_says_not_called_when_no_call_ran() -> None:
    s = session({"command": {"prefix": "pytest"}})
    s.begin_turn(user("please run the tests"))
    outcome = s.finish_round("All tests pass.")
    assert outcome.problem == "text_only"
    assert outcome.message is not None and outcome.message.startswith(
        "You answered without calling"
    )


def test_a_blocked_call_is_not_a_call_with_other_arguments() -> None:
    s = session({"command": {"prefix": "pytest"}})
    s.begin_turn(user("please run the tests"))
    s._policy.turn_policy.observe_call(
        s._state.turn_state, "run_shell", {"command": "ls"}, ran=False
    )
    assert s.finish_round("done").problem == "text_only"


def test_the_exhausted_warning_in_chinese_names_the_call() -> None:
    s = session({"command": {"prefix": "pytest"}})
    s.begin_turn(user("帮我跑测试"))
    for _ in range(3):
        s.before_call("run_shell", {"command": "make test"})
        s.after_call("run_shell", {"command": "make test"}, result="ok")
        outcome = s.finish_round("测试都通过了")
    assert outcome.exhausted and outcome.problem == "other_args"
    assert outcome.text is not None and outcome.text.startswith(
        '⚠ 纠偏 2 次后，必需工具 run_shell 仍未按 run_shell(command=<text starting with "pytest">) '
        "调用（参数不符），以下回答可能不可靠。"
    )


def test_the_other_arguments_flag_survives_the_state_codec() -> None:
    s = session({"command": {"prefix": "pytest"}})
    s.begin_turn(user("please run the tests"))
    s.before_call("run_shell", {"command": "make"})
    s.after_call("run_shell", {"command": "make"}, result="ok")
    restored = decode(encode(s._state), 30, s._state.index is not None)
    assert restored.turn_state is not None and restored.turn_state.other_args is True
    s.begin_turn(user("please run the tests"))
    assert s._state.turn_state is not None and s._state.turn_state.other_args is False
    again = decode(encode(s._state), 30, s._state.index is not None).turn_state
    assert again is not None and again.other_args is False


@pytest.mark.parametrize(
    ("args", "path"),
    [
        ({"command": {"regex": "(unclosed"}}, "intents[run_tests].require.args.command.regex"),
        ({"command": {"any": False}}, "intents[run_tests].require.args.command"),
        ({"command": {"prefix": 3}}, "intents[run_tests].require.args.command"),
    ],
)
def test_bad_matchers_are_rules_errors_not_tracebacks(args: dict[str, Any], path: str) -> None:
    from loopguard.config.layers import load
    from loopguard.policy.turns import TurnPolicy

    data = load({"version": 1}, "mapping").data
    data = {**data, **{k: v for k, v in rules(args).items() if k != "version"}}
    with pytest.raises(RulesError) as caught:
        TurnPolicy.from_config(data)
    assert caught.value.findings[0].path == path
    with pytest.raises(RulesError):
        loopguard.Guard.from_dict(rules(args))


# -- run_turn / arun_turn ---------------------------------------------------------


def drive(
    mode: str, rounds: list[Any], tools: dict[str, Any], text: str, s: loopguard.Session
) -> tuple[TurnResult, ScriptedModel]:
    if mode == "sync":
        model = ScriptedModel(rounds)
        return run_turn(model, tools, user(text), s), model

    async def wrap(fn: Any) -> Any:
        async def tool(args: dict[str, Any]) -> Any:
            return fn(args)

        return tool

    async def main() -> tuple[TurnResult, ScriptedModel]:
        amodel = AsyncScriptedModel(rounds)
        atools = {name: await wrap(fn) for name, fn in tools.items()}
        return await arun_turn(amodel, atools, user(text), s), amodel

    return asyncio.run(main())


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_run_turn_retries_a_call_with_other_arguments_then_accepts_a_prefix(mode: str) -> None:
    ran: list[Any] = []
    s = session({"command": {"prefix": "pytest"}}, mode)
    result, model = drive(
        mode,
        [
            calls(("run_shell", {"command": "make test"})),
            say("All pass."),
            calls(("run_shell", {"command": "pytest -q tests/"})),
            say("12 passed."),
        ],
        {"run_shell": lambda a: ran.append(a) or "ok"},
        "please run the tests",
        s,
    )
    assert ran == [{"command": "make test"}, {"command": "pytest -q tests/"}]
    assert (model.calls, result.text) == (4, "12 passed.")
    retry = model.requests[2][0][-1]
    assert retry["role"] == "user" and retry["content"].startswith("You called run_shell, but not")
    assert [e.kind for e in result.events if e.kind in ("retry", "finish")] == ["retry", "finish"]
    assert result.events[-1].detail == "ok"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_run_turn_ends_with_the_other_arguments_warning(mode: str) -> None:
    s = session({"command": {"regex": r"^pytest\b"}}, mode)
    wrong = calls(("run_shell", {"command": "make test"}))
    result, model = drive(
        mode,
        [wrong, say("a"), say("b"), say("c")],
        {"run_shell": lambda a: "ok"},
        "please run the tests",
        s,
    )
    assert model.calls == 4
    warning = render(
        s.config,
        "exhausted_other_args",
        "en",
        tool="run_shell",
        retries=2,
        call="run_shell(command=<text matching /^pytest\\b/>)",
    )
    assert result.text == f"{warning}\n\nc"
    assert result.events[-1].detail == "exhausted"


def test_lint_reports_a_bad_argument_pattern_as_bad_regex(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    from pathlib import Path

    from loopguard.cli import main

    monkeypatch.chdir(Path(__file__).parent / "lint_cases")
    assert main(["lint", "--format", "json", "invalid/intent_arg_matchers.yaml"]) == 1
    found = json.loads(capsys.readouterr().out)
    assert [(f["line"], f["col"], f["code"]) for f in found][0] == (10, 26, "bad-regex")


def test_replay_and_explain_say_the_tool_was_called_with_other_arguments(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pathlib import Path

    from loopguard.cli import main

    example = str(
        Path(__file__).parents[1]
        / "examples"
        / "transcripts"
        / "portfolio-from-imagination.chat.json"
    )
    main(["replay", "--rules", "builtin:portfolio", example])
    out = capsys.readouterr().out
    assert "the model answered with text without calling it; a retry" in out  # turn 1: no call
    assert (
        "the model called it, but never with the required arguments; a retry" in out
    )  # turn 2: mode=view
    main(["explain", "--rules", "builtin:portfolio", example, "--decision", "2"])
    assert (
        "  the model called portfolio, but never with the required arguments\n"
        in capsys.readouterr().out
    )
