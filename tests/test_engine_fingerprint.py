"""Fingerprints (README "Arguments"): canonical argument text, stable digests, outcome digests.

Arguments may be a dict, a JSON string, an invalid JSON string or any odd Python value; the
guard never raises, and the digests are the same in every process (checked in subprocesses
with different hash seeds).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

import loopguard
from loopguard.state.fingerprint import args_digest, canonical_text, parse_args

# Built identically here and in the subprocesses (exec'd as __main__).
ODD_VALUES = r"""
import datetime, decimal, math, types, uuid
cycle = [1]
cycle.append(cycle)
loop = {"name": "loop"}
loop["self"] = loop
deep = []
for _ in range(1500):
    deep = [deep]
class Hostile:
    __slots__ = ()
    def __str__(self):
        raise RuntimeError("no")
VALUES = [
    {"b": 1, "a": [1, 2], "c": {"z": None, "y": "持仓"}},
    {"blob": b"\x00\xff raw bytes", "buf": bytearray(b"ab")},
    {"tags": {"pear", "apple", "fig", "kiwi", "plum", "lime", "date"}},
    {"ids": frozenset({30, 10, 20})},
    ("tuple", 1, (2, 3)),
    {"nan": float("nan"), "inf": float("inf"), "ninf": -math.inf},
    cycle,
    loop,
    deep,
    {1: "int key", (1, 2): "tuple key", None: "none key"},
    object(),
    types.SimpleNamespace(a=1, b=[1, {"c"}]),
    datetime.date(2024, 1, 2),
    decimal.Decimal("1.10"),
    1 + 2j,
    uuid.UUID(int=5),
    Hostile(),
    "not json {",
    '{"b": 2, "a": 1}',
    "",
    None,
    3.5,
    ["持仓", "ünïcode"],
]
"""
DIGEST_SCRIPT = (
    ODD_VALUES
    + r"""
import json, loopguard
session = loopguard.Guard.default().session("fingerprints")
for value in VALUES:
    session.before_call("tool", value)
print(json.dumps([entry.digest.hex() for entry in session.history()]))
"""
)


def odd_values() -> list[Any]:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(ODD_VALUES, namespace)  # noqa: S102 — the fixed snippet above
    return namespace["VALUES"]


def digest(tool: str, args: Any) -> bytes:
    return args_digest(tool, canonical_text(parse_args(args)))


def test_dict_json_string_and_key_order_give_one_digest() -> None:
    forms = [
        {"path": "/a", "opts": {"x": 1, "y": [1, 2]}},
        {"opts": {"y": [1, 2], "x": 1}, "path": "/a"},
        '{"opts": {"y": [1, 2], "x": 1}, "path": "/a"}',
        '{"path":"/a","opts":{"x":1,"y":[1,2]}}',
    ]
    assert len({digest("read", f) for f in forms}) == 1
    session = loopguard.Guard.default().session("s")
    for f in forms[:3]:
        session.begin_turn([])
        session.before_call("read", f)
    assert len({e.digest for e in session.history()}) == 1


def test_canonical_text_sorts_keys_keeps_non_ascii_and_default_separators() -> None:
    text = canonical_text({"b": [1, {"d": 2, "c": 3}], "a": "持仓 ü"})
    assert text == '{"a": "持仓 ü", "b": [1, {"c": 3, "d": 2}]}'


def test_invalid_json_string_is_raw_text() -> None:
    assert parse_args('{"a": 1') == '{"a": 1'
    assert canonical_text(parse_args('{"a": 1')) == '{"a": 1'
    assert digest("t", '{"a": 1') == digest("t", '{"a": 1')
    assert digest("t", '{"a": 1') != digest("t", {"a": 1})


def test_the_tool_name_is_part_of_the_digest() -> None:
    assert digest("search", {"q": "x"}) != digest("lookup", {"q": "x"})


def test_fallback_forms_are_documented_and_deterministic() -> None:
    assert canonical_text({"b": b"\x00\xff"}) == '{"b": {"$bytes": "AP8="}}'
    assert canonical_text({"s": {"b", "a", "c"}}) == '{"s": ["a", "b", "c"]}'
    assert canonical_text({"t": (1, (2, 3))}) == canonical_text({"t": [1, [2, 3]]})
    assert (
        canonical_text([float("nan"), float("inf"), -float("inf")])
        == '["NaN", "Infinity", "-Infinity"]'
    )
    cycle: list[Any] = [1]
    cycle.append(cycle)
    assert canonical_text(cycle) == '[1, "$cycle"]'
    assert "0x" not in canonical_text(object())


@pytest.mark.parametrize("index", range(len(odd_values())))
def test_odd_values_never_raise(index: int) -> None:
    value = odd_values()[index]
    session = loopguard.Guard.from_dict(
        {"version": 1, "loop_detection": {"enabled": True}}
    ).session(f"odd-{index}")
    session.begin_turn([])
    before = session.before_call("tool", value, call_id="c1")
    after = session.after_call("tool", value, result=value, call_id="c1")
    error = "no error given" if value is None else value
    failed = session.after_call("tool", value, error=error, call_id="c2")
    assert before.action == after.action == failed.action == "allow"
    history = session.history()
    assert [e.digest for e in history] == [history[0].digest] * 2
    assert history[0].outcome is not None and history[1].outcome is not None
    assert history[1].outcome.startswith(b"error:")


def test_odd_values_have_stable_digests_within_a_process() -> None:
    first = [digest("tool", v) for v in odd_values()]
    second = [digest("tool", v) for v in odd_values()]
    assert first == second
    distinct = {d for v, d in zip(odd_values(), first, strict=True) if v not in ("", None)}
    assert len(distinct) == len(first) - 2  # and they do not collapse into one


def test_no_arguments_in_any_form_is_one_digest() -> None:
    assert digest("t", None) == digest("t", "") == digest("t", "  ") == digest("t", {})


@pytest.mark.slow
@pytest.mark.parametrize("seeds", [("1", "2")])
def test_digests_are_identical_across_processes(seeds: tuple[str, str]) -> None:
    runs = []
    for seed in seeds:
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", DIGEST_SCRIPT],
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
        runs.append(json.loads(out.stdout))
    here = [digest("tool", v).hex() for v in odd_values()]
    assert runs[0] == runs[1] == here


def test_outcome_digests_separate_errors_from_results() -> None:
    session = loopguard.Guard.default().session("s")
    session.before_call("t", {}, call_id="1")
    session.after_call("t", {}, result="boom", call_id="1")
    session.before_call("t", {}, call_id="2")
    session.after_call("t", {}, error="boom", call_id="2")
    ok, err = (e.outcome for e in session.history())
    assert ok is not None and err is not None and ok != err
    assert err.startswith(b"error:") and not ok.startswith(b"error:")


def test_volatile_fields_are_dropped_at_every_depth() -> None:
    session = loopguard.Guard.default().session("s")
    results = [
        {"data": {"rows": [1], "meta": {"timestamp": 1, "requestId": "a"}}, "ts": 5},
        '{"ts": 9, "data": {"meta": {"requestId": "b", "timestamp": 2}, "rows": [1]}}',
    ]
    for i, result in enumerate(results):
        session.before_call("q", {}, call_id=str(i))
        session.after_call("q", {}, result=result, call_id=str(i))
    first, second = (e.outcome for e in session.history())
    assert first == second


@pytest.mark.parametrize("tool", [None, 42, b"bytes-name", ("t",), "工具"])
def test_odd_tool_names_never_raise(tool: Any) -> None:
    session = loopguard.Guard.from_dict(
        {"version": 1, "loop_detection": {"enabled": True}}
    ).session("s")
    session.begin_turn([])
    assert session.before_call(tool, {"a": 1}, call_id="1").action == "allow"
    assert (
        session.after_call(tool, {"a": 1}, error=RuntimeError("x"), call_id="1").action == "allow"
    )
    (entry,) = session.history()
    assert isinstance(entry.tool, str) and entry.outcome is not None


def test_odd_tool_names_arguments_and_results_never_raise() -> None:
    class Hostile:
        def __str__(self) -> str:
            raise RuntimeError("no")

        __repr__ = __str__

    cycle: dict[str, object] = {}
    cycle["self"] = cycle
    deep: list[object] = []
    node = deep
    for _ in range(5000):
        child: list[object] = []
        node.append(child)
        node = child
    session = loopguard.Guard.from_dict(
        {"version": 1, "loop_detection": {"enabled": True}}
    ).session("odd")
    odd = [
        None,
        "",
        "{",
        b"\xff",
        Hostile(),
        {1: 2, "a": {3}},
        float("nan"),
        deep,
        cycle,
        ("t",),
        10**400,
        "\ud800",
    ]
    for tool in ("t", None, 5, Hostile(), "\ud800x"):
        for value in odd:
            session.before_call(tool, value)
            session.after_call(tool, value, result=value)
            session.after_call(tool, value, error=value if value is not None else "e")
    assert len(session.history()) == 30  # capped, and every call was recorded
