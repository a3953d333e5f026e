"""One turn's records: what the model must call, how a round ended, and a session's turn state.

A required argument is an exact value or a matcher mapping (`{equals: V}`, `{prefix: T}`,
`{regex: P}`, `{any: true}`); `format_call` shows the call to make with matchers in words.
The matching itself is `loopguard.policy.turns`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MATCH_KEYS = ("equals", "prefix", "regex", "any")


def matcher(spec: Any) -> tuple[str, Any] | None:
    """`(kind, operand)` when a required value is a matcher mapping, None for an exact value."""
    if isinstance(spec, Mapping) and len(spec) == 1:
        ((kind, operand),) = spec.items()
        if kind in MATCH_KEYS:
            return kind, operand
    return None


def _shown(spec: Any) -> str:
    found = matcher(spec)
    if found is None:
        return json.dumps(spec, ensure_ascii=False, default=str)
    kind, operand = found
    text = json.dumps(operand, ensure_ascii=False, default=str)
    if kind == "equals":
        return text
    if kind == "prefix":
        return f"<text starting with {text}>"
    if kind == "regex":
        return f"<text matching /{operand}/>"
    return "<any value>"


def format_call(tool: str, args: Mapping[str, Any]) -> str:
    """The call to make, e.g. `portfolio(mode="diagnose")` or `run_shell(command=<text
    starting with "pytest">)` for a non-exact requirement."""
    shown = ", ".join(f"{k}={_shown(v)}" for k, v in args.items())
    return f"{tool}({shown})"


@dataclass(frozen=True)
class TurnExpectation:
    """The tool the model must call this turn, with the argument values it must pass."""

    rule: str
    tool: str
    args: dict[str, Any]
    reason: str

    @property
    def call(self) -> str:
        return format_call(self.tool, self.args)


@dataclass(frozen=True)
class RoundOutcome:
    """After a round without tool calls: `retry` (send `message` as a user turn) or `finish`."""

    action: str  # "retry" | "finish"
    message: str | None  # the user-role retry text (retry only)
    text: str | None  # the assistant text; on an exhausted finish, prefixed with the warning
    problem: str | None  # "no_output" | "plan_only" | "text_only" | "other_args" when unmet
    retries: int  # retries used this turn so far
    exhausted: bool = False
    expectation: TurnExpectation | None = None


@dataclass
class TurnState:
    """One session's mutable turn state (guarded by the session's lock)."""

    expectation: TurnExpectation | None = None
    retries: int = 0
    satisfied: bool = False
    user_text: str = ""
    other_args: bool = False  # the required tool ran this turn, only with other arguments
