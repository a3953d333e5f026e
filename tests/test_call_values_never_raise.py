"""Hostile values in any position of the per-call API never escape it (issue 22, item 16):
a `str` subclass whose own methods raise, an object whose `__class__` raises (which breaks
`isinstance`), and a `__str__` that raises `SystemExit`, as the tool name, arguments, result,
error, call id or run id. Each still gets a stable fingerprint, so a loop of such calls is
still caught.
"""

from __future__ import annotations

from typing import Any

import pytest

import loopguard


class RaisingStr(str):
    """A str subclass whose own text methods raise (it is still a str to `isinstance`)."""

    def __str__(self) -> str:
        raise RuntimeError("str")

    def __format__(self, spec: str) -> str:
        raise RuntimeError("format")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    __hash__ = str.__hash__


class RaisingClass:
    @property  # type: ignore[misc]
    def __class__(self) -> Any:
        raise RuntimeError("class")


class Exits:
    def __str__(self) -> str:
        raise SystemExit(3)

    def __repr__(self) -> str:  # (pytest prints the failing values: keep that working)
        return "Exits()"


class ReturnsRaisingStr:
    def __str__(self) -> str:
        return RaisingStr("text")


HOSTILE = {
    "str-subclass": lambda: RaisingStr("t"),
    "str-subclass-json": lambda: RaisingStr('{"a": 1}'),
    "class-raises": RaisingClass,
    "str-exits": Exits,
    "str-returns-str-subclass": ReturnsRaisingStr,
}
POSITIONS = ("tool", "args", "result", "error", "call_id", "run_id")


def _calls(session: loopguard.Session, position: str, value: Any) -> list[str]:
    actions = []
    for _ in range(4):
        call: dict[str, Any] = {"tool": "read", "args": {"path": "a"}}
        if position in ("tool", "args", "call_id", "run_id"):
            call[position] = value
        actions.append(session.before_call(**call).action)
        after: dict[str, Any] = {**call, "result": "same"}
        if position in ("result", "error"):
            after[position] = value
        session.after_call(**after)
    return actions


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_value_never_escapes_and_the_loop_is_still_caught(
    case: str, position: str
) -> None:
    session = loopguard.Guard.from_dict({"version": 1}).session("s")
    actions = _calls(session, position, HOSTILE[case]())  # used to raise (or exit the host)
    if position in ("call_id", "run_id"):  # one id for four calls: each call is its own
        assert actions[0] == "allow"
    else:
        assert actions[2] != "allow"  # the third identical call is still stopped
    for entry in session.history():
        assert type(entry.tool) is str
        entry.to_dict()


def test_a_str_subclass_tool_name_is_its_text() -> None:
    hostile = loopguard.Guard.from_dict({"version": 1}).session("s")
    plain = loopguard.Guard.from_dict({"version": 1}).session("p")
    decision = hostile.before_call(RaisingStr("read"), {"path": "a"})
    plain.before_call("read", {"path": "a"})
    assert type(decision.tool) is str and decision.tool == "read"
    assert hostile.history()[0].digest == plain.history()[0].digest


def test_str_subclass_arguments_are_read_as_their_text() -> None:
    a = loopguard.Guard.from_dict({"version": 1}).session("a")
    b = loopguard.Guard.from_dict({"version": 1}).session("b")
    a.before_call("read", RaisingStr('{"path": "x"}'))
    b.before_call("read", '{"path": "x"}')
    assert a.history()[0].digest == b.history()[0].digest
