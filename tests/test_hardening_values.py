"""Hostile values through the call API and the runtime (issue #10): they never raise.

Huge integers (over the interpreter's 4,300-digit int/text limit), lone surrogates (half
an emoji), objects whose iteration, fields or str() raise, NumPy arrays longer than their
repr shows, and sets whose members share a canonical text.
"""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from fakes import ScriptedModel, calls, say

import loopguard
from loopguard.runtime.loop import arun_turn, run_turn
from loopguard.state.fingerprint import args_digest, canonical_text, parse_args

BIG = math.factorial(2000)  # 5,736 digits
BIG_TEXT = "9" * 5000
HALF = "\ud83d"  # a lone high surrogate
PORTFOLIO = {"version": 1, "extends": ["builtin:portfolio-en"]}


class Raises:
    """Every way of looking at it raises."""

    def __str__(self) -> str:
        raise RuntimeError("str")

    def __repr__(self) -> str:
        raise RuntimeError("repr")

    @property
    def __dict__(self) -> Any:  # type: ignore[override]
        raise RuntimeError("dict")


class BadList(list):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        raise RuntimeError("iter")


class BadMap(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        raise RuntimeError("items")

    def __iter__(self) -> Any:
        raise RuntimeError("iter")


class BadError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str")


HOSTILE = [
    BIG,
    -BIG,
    {"n": BIG},
    Raises(),
    BadList([1, 2]),
    BadMap(a=1),
    {"x": Raises()},
    np.arange(5000),
    {"s": HALF},
    HALF,
    {HALF: 1},
    b"\xff" * 10,
]


@pytest.mark.parametrize("value", HOSTILE, ids=lambda v: type(v).__name__)
def test_the_call_api_takes_any_value(value: Any) -> None:
    session = loopguard.Guard.default().session("hostile")
    for n in range(3):
        decision = session.before_call("tool", {"v": value}, call_id=f"c{n}")
        session.after_call("tool", {"v": value}, result=value, call_id=f"c{n}")
        session.after_call("tool", value, error=value, call_id=f"e{n}")
        assert decision.action in ("allow", "warn", "critical", "breaker")
    assert len(session.history()) == 6


def test_hostile_tool_names_ids_and_errors_do_not_raise() -> None:
    session = loopguard.Guard.default().session("names")
    session.before_call(Raises(), Raises(), call_id=Raises(), run_id=Raises())
    session.after_call(Raises(), Raises(), error=BadError(), call_id=Raises(), run_id=Raises())
    assert session.history()[-1].outcome is not None


def test_json_text_with_a_huge_integer_is_parsed_and_fingerprinted() -> None:
    parsed = parse_args(f'{{"n": {BIG_TEXT}}}')
    assert parsed == {"n": BIG_TEXT}  # kept as its digits, not raw text
    other = parse_args(f'{{"n": {BIG_TEXT[:-1]}8}}')
    assert args_digest("t", canonical_text(parsed)) != args_digest("t", canonical_text(other))


def test_huge_python_integers_have_distinct_canonical_texts() -> None:
    assert canonical_text(BIG) != canonical_text(BIG + 1)
    assert canonical_text({"n": BIG}) == canonical_text({"n": math.factorial(2000)})


def test_numpy_arrays_beyond_their_elided_repr_get_distinct_digests() -> None:
    a, b = np.zeros(2000), np.zeros(2000)
    b[1000] = 1.0
    assert canonical_text(a) != canonical_text(b)
    assert canonical_text(np.arange(3000)) == canonical_text(np.arange(3000))


def test_sets_whose_members_share_a_text_are_canonical_in_one_process() -> None:
    assert canonical_text({True, "true", None, "null"}) == canonical_text(
        {"null", None, "true", True}
    )


_PROBE = (
    "import sys; from loopguard.state.fingerprint import args_digest, canonical_text;"
    "v = [{True, 'true', None, 'null'}, frozenset({1, '1', 1.5, '1.5'}), {'k': {False, 'false'}}];"
    "sys.stdout.write(canonical_text(v) + args_digest('t', canonical_text(v)).hex())"
)


@pytest.mark.slow
def test_fingerprints_are_equal_across_processes_with_different_hash_seeds() -> None:
    outputs = set()
    for seed in ("0", "1", "2", "12345", "random"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run(
            [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1


def test_lone_surrogates_in_turn_texts_do_not_raise() -> None:
    session = loopguard.Guard.from_dict(PORTFOLIO).session("half")
    expectation = session.begin_turn(
        [{"role": "user", "content": f"{HALF} Can you CHECK MY PORTFOLIO? {HALF}"}]
    )
    assert expectation is not None and expectation.tool == "portfolio"  # the keywords still match
    outcome = session.finish_round(f"done {HALF}")
    assert outcome.action == "retry"
    assert (
        session.begin_turn(
            [{"role": "assistant", "content": HALF}, {"role": "user", "content": HALF}]
        )
        is None
    )
    assert session.finish_round(HALF).action == "finish"


def _tools() -> dict[str, Any]:
    def boom(args: dict[str, Any]) -> Any:
        raise BadError()

    return {
        "big": lambda args: BIG,
        "half": lambda args: {"t": HALF},
        "odd": lambda args: Raises(),
        "boom": boom,
        "portfolio": lambda args: "AAPL 10",
    }


def _script() -> ScriptedModel:
    return ScriptedModel(
        [
            calls(("big", {}), ("half", {"q": HALF}), ("odd", {}), ("boom", {}), content=HALF),
            calls(("big", f'{{"n": {BIG_TEXT}}}')),
            say(f"answer {HALF}"),
            calls(("portfolio", {"mode": "diagnose"})),
            say("done"),
        ]
    )


def test_run_turn_survives_huge_integers_surrogates_and_raising_objects() -> None:
    session = loopguard.Guard.from_dict(PORTFOLIO).session("rt")
    result = run_turn(
        _script(), _tools(), [{"role": "user", "content": f"CHECK MY PORTFOLIO {HALF}"}], session
    )
    tool_texts = [m["content"] for m in result.messages if m["role"] == "tool"]
    assert '"$int"' in tool_texts[0]  # the huge result reaches the model as a stand-in
    assert HALF in tool_texts[1]
    assert "BadError" in tool_texts[3]
    assert "unusable arguments" in tool_texts[4]  # a 5,000-digit argument is refused, not raised
    assert result.text == "done"


def test_arun_turn_survives_the_same() -> None:
    session = loopguard.Guard.from_dict(PORTFOLIO).session("art")
    result = asyncio.run(
        arun_turn(
            _script(),
            _tools(),
            [{"role": "user", "content": f"CHECK MY PORTFOLIO {HALF}"}],
            session,
        )
    )
    assert result.text == "done"


def test_a_long_argument_costs_a_small_multiple_of_its_size() -> None:
    """A 100 MB argument used to add 2.5 GB (the fuzzy detector's gram array of all of it)."""
    import json
    import tracemalloc

    session = loopguard.Guard.default().session("long")  # doom_loop_fuzzy is on in builtin:default
    text = json.dumps({"content": "abcdefghij" * 400_000})  # 4 MB
    session.before_call("write", {"content": "warm-up"}, call_id="w")
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for n in range(2):
            session.before_call("write", text, call_id=f"c{n}")
            session.after_call("write", text, result=text, call_id=f"c{n}")
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak < 8 * len(text)  # was ~26x


def _random_text(seed: int, size: int) -> str:
    import random

    return "".join(
        random.Random(seed).choices([chr(c) for c in range(0x4E00, 0x4E00 + 3000)], k=size)
    )


def _fuzzy_session() -> loopguard.Session:
    rules = {
        "version": 1,
        "loop_detection": {"enabled": False},
        "detectors": {
            "doom_loop_exact": {"enabled": False},
            "cycle": {"enabled": False},
            "doom_loop_fuzzy": {
                "enabled": True,
                "outcome": "any",
                "threshold": 3,
                "similarity": 0.95,
                "level": "critical",
            },
        },
    }
    return loopguard.Guard.from_dict(rules).session("fuzzy")


def test_long_arguments_differing_only_in_the_middle_look_alike_to_the_fuzzy_detector() -> None:
    """Documented: past 16,384 characters only the head and tail are compared."""
    session = _fuzzy_session()
    middle = [_random_text(seed, 50_000) for seed in range(3)]
    actions = []
    for n, filler in enumerate(middle):
        args = {"text": "HEAD" * 3000 + filler + "TAIL" * 3000}
        actions.append(session.before_call("write", args, call_id=f"c{n}").action)
        session.after_call("write", args, result="ok", call_id=f"c{n}")
    assert actions[-1] == "critical"
    assert (
        len({e.digest for e in session.history()}) == 3
    )  # the exact digests still tell them apart


def test_long_arguments_with_different_heads_are_not_alike() -> None:
    session = _fuzzy_session()
    actions = []
    for n in range(3):
        text = _random_text(10 + n, 40_000)
        actions.append(session.before_call("write", {"text": text}, call_id=f"c{n}").action)
        session.after_call("write", {"text": text}, result="ok", call_id=f"c{n}")
    assert actions == ["allow", "allow", "allow"]
