"""Property tests (issue #10): hostile values never make the call API or the runtime raise,
fingerprints of equal values agree across processes, and any transcript — valid, mutated
or cut off, in every format — replays to exit 0, 1 or 2 without a traceback.

Runs under the suite's Hypothesis profile: "ci" (short, fixed seed) by default, the longer
search with `HYPOTHESIS_PROFILE=long python -m pytest -q tests/test_hardening_props.py`.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import pickle
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hardening_values import BadError, BadList, BadMap, Raises

import loopguard
from loopguard.cli import main as cli
from loopguard.replay.transcripts.detect import FORMATS
from loopguard.runtime.loop import run_turn
from loopguard.state.fingerprint import args_digest, canonical_text

pytestmark = pytest.mark.slow  # Hypothesis searches; fingerprints compared in subprocesses

GUARD = loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:portfolio-en"]})
SURROGATES = st.sampled_from(["\ud83d", "\udc00", "a\ud800b", "\udfff"])
TEXT = st.one_of(
    st.text(max_size=40),
    SURROGATES,
    st.builds(lambda a, b: a + b, st.text(max_size=10), SURROGATES),
)
HUGE = st.builds(
    lambda e, sign, k: sign * (10**e + k),
    st.integers(4300, 5200),
    st.sampled_from([1, -1]),
    st.integers(0, 10**6),
)
NUMBERS = st.one_of(st.integers(), HUGE, st.floats(allow_nan=True, allow_infinity=True))
JSON = st.recursive(
    st.none() | st.booleans() | NUMBERS | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)


def _cycle() -> Any:
    value: list[Any] = [1]
    value.append(value)
    return value


def _deep() -> Any:
    value: Any = []
    for _ in range(1200):
        value = [value]
    return value


HOSTILE = st.one_of(
    st.sampled_from(
        [Raises(), BadList([1]), BadMap(a=1), BadError(), math.factorial(2000), float("nan")]
    ),
    st.builds(lambda: _cycle()),
    st.builds(lambda: _deep()),
    st.binary(max_size=20),
    st.frozensets(st.one_of(st.booleans(), st.none(), TEXT, st.integers()), max_size=5),
    st.builds(np.array, st.lists(st.integers(-1000, 1000), max_size=1500)),
    st.tuples(TEXT, NUMBERS),
)
ANY = st.one_of(
    JSON,
    HOSTILE,
    st.lists(st.one_of(JSON, HOSTILE), max_size=3),
    st.dictionaries(TEXT, st.one_of(JSON, HOSTILE), max_size=3),
)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.lists(
        st.tuples(
            st.one_of(TEXT, st.just("read")),
            ANY,
            ANY,
            st.booleans(),
            st.one_of(st.none(), TEXT, st.integers()),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_before_and_after_call_never_raise(calls: list[tuple[Any, Any, Any, bool, Any]]) -> None:
    session = GUARD.session("props")
    for tool, args, value, failed, call_id in calls:
        decision = session.before_call(tool, args, call_id=call_id)
        assert decision.action in ("allow", "warn", "critical", "breaker")
        if failed:
            session.after_call(tool, args, error=value, call_id=call_id)
        else:
            session.after_call(tool, args, result=value, call_id=call_id)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    user=TEXT,
    replies=st.lists(
        st.one_of(
            TEXT,
            st.lists(
                st.tuples(st.sampled_from(["t", "portfolio", "x"]), st.one_of(JSON, TEXT)),
                max_size=3,
            ),
        ),
        max_size=4,
    ),
    results=st.lists(ANY, min_size=1, max_size=4),
)
def test_run_turn_never_raises(user: str, replies: list[Any], results: list[Any]) -> None:
    script = iter(replies)
    pool = iter(results * 20)

    def model(messages: list[Any], tools_enabled: bool = True) -> Any:
        step = next(script, "the end")
        if isinstance(step, str):
            return {"role": "assistant", "content": step}
        calls = [
            {
                "id": f"c{i}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else _dumps(args),
                },
            }
            for i, (name, args) in enumerate(step)
        ]
        return {"role": "assistant", "content": None, "tool_calls": calls}

    def tool(args: Any) -> Any:
        value = next(pool)
        if isinstance(value, BaseException):
            raise value
        return value

    result = run_turn(
        model,
        {"t": tool, "portfolio": tool},
        [{"role": "user", "content": user}],
        GUARD.session("rt"),
    )
    assert isinstance(result.text, str)


def _dumps(value: Any) -> str:
    """JSON text of a generated value (huge ints written by hand, NaN as JSON5 writes it)."""
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return json.dumps(value, ensure_ascii=False)
    finally:
        sys.set_int_max_str_digits(limit)


PLAIN = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=5), inner, max_size=4)
        | st.frozensets(
            st.one_of(st.booleans(), st.none(), st.text(max_size=4), st.integers()), max_size=5
        )
        | st.tuples(inner, inner)
    ),
    max_leaves=10,
)
_PRINT = (
    "import pickle, sys; from loopguard.state.fingerprint import args_digest, canonical_text;"
    "[print(args_digest('t', canonical_text(v)).hex()) for v in pickle.load(sys.stdin.buffer)]"
)


@settings(max_examples=3, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(PLAIN, min_size=20, max_size=40))
def test_fingerprints_agree_across_processes(values: list[Any]) -> None:
    here = [args_digest("t", canonical_text(v)).hex() for v in values]
    for seed in ("1", "7"):
        done = subprocess.run(
            [sys.executable, "-c", _PRINT],
            input=pickle.dumps(values),
            capture_output=True,
            env=dict(os.environ, PYTHONHASHSEED=seed),
            check=True,
            timeout=120,
        )
        assert done.stdout.decode().split() == here


CALL = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"p": 1}'}}
VALID: dict[str, list[Any]] = {
    "openai-chat": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ],
    "openai-responses": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "function_call", "call_id": "a", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "a", "output": "ok"},
    ],
    "anthropic": [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "u", "name": "read", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u", "content": "ok"}]},
    ],
    "claude-code": [
        {"type": "user", "sessionId": "s", "message": {"role": "user", "content": "hi"}},
        {
            "type": "assistant",
            "sessionId": "s",
            "message": {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "u", "name": "Read", "input": {"p": 1}}],
            },
        },
        {
            "type": "user",
            "sessionId": "s",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "u", "content": "ok"}],
            },
        },
    ],
    "codex": [
        {"type": "session_meta", "payload": {"id": "s"}},
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "hi"}],
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "shell",
                "call_id": "a",
                "arguments": '{"cmd": ["ls"]}',
            },
        },
        {
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "a", "output": "ok"},
        },
    ],
}
SAMPLES = sorted((Path(__file__).parent / "agent_samples").iterdir())


def _mutate(data: Any, draw: Any) -> Any:
    """Replace, drop or retype one value somewhere in a JSON document."""
    if isinstance(data, dict) and data:
        key = draw(st.sampled_from(sorted(data)))
        action = draw(st.sampled_from(["replace", "drop", "recurse"]))
        if action == "drop":
            return {k: v for k, v in data.items() if k != key}
        if action == "replace":
            return {**data, key: draw(JSON)}
        return {**data, key: _mutate(data[key], draw)}
    if isinstance(data, list) and data:
        i = draw(st.integers(0, len(data) - 1))
        return [*data[:i], _mutate(data[i], draw), *data[i + 1 :]]
    return draw(JSON)


@st.composite
def transcripts(draw: Any) -> tuple[bytes, str | None]:
    """(file bytes, --input-format or None).

    Valid, mutated, cut off, JSONL or a document, maybe gzipped.
    """
    if draw(st.booleans()):
        messages: list[Any] = json.loads(json.dumps(VALID[draw(st.sampled_from(sorted(VALID)))]))
        for _ in range(draw(st.integers(0, 3))):
            messages = _mutate(messages, draw) if isinstance(messages, list) else [messages]
        if not isinstance(messages, list):
            messages = [messages]
        as_lines = draw(st.booleans())
        text = ("\n".join(_dumps(m) for m in messages) + "\n") if as_lines else _dumps(messages)
        raw = text.encode("utf-8", "surrogatepass")
    else:
        raw = draw(st.sampled_from(SAMPLES)).read_bytes()
    if draw(st.booleans()):  # cut off, or a few bytes changed
        cut = draw(st.integers(0, len(raw)))
        raw = (
            raw[:cut]
            if draw(st.booleans())
            else raw[:cut] + draw(st.binary(max_size=4)) + raw[cut + 1 :]
        )
    if draw(st.integers(0, 9)) == 0:
        raw = gzip.compress(raw, mtime=0)
    return raw, draw(st.one_of(st.none(), st.sampled_from(FORMATS)))


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=transcripts())
def test_replay_of_any_transcript_exits_0_1_or_2(
    tmp_path: Path, case: tuple[bytes, str | None]
) -> None:
    raw, forced = case
    path = tmp_path / "t.jsonl"
    path.write_bytes(raw)
    argv = ["replay", "--color", "never", str(path)]
    if forced is not None:
        argv[1:1] = ["--input-format", forced]
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli(argv)
    assert code in (0, 1, 2)
    assert "Traceback" not in err.getvalue()
