"""Required argument matchers (`require.args`): exact values, `equals`, `prefix`, `regex`, `any`.

A `regex` matcher is a user pattern (the `regex` package), at most `MAX_PATTERN_CHARS`
long and searched with a `MATCH_TIMEOUT_S` timeout (per search); the matchers of one call share one
deadline, and a timed-out search counts as no match.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import regex

from loopguard.errors import rules_error
from loopguard.state.turn import matcher
from loopguard.text.regexcheck import MAX_PATTERN_CHARS, Deadline, safe_compile, search


@functools.lru_cache(maxsize=256)
def compiled_pattern(source: str) -> Any:
    """The compiled pattern, or None when it is too long or does not compile (lint says so)."""
    if len(source) > MAX_PATTERN_CHARS:
        return None
    try:
        return safe_compile(source)
    except (regex.error, ValueError, OverflowError):
        return None


def arg_matches(spec: Any, present: bool, value: Any, deadline: Deadline | None = None) -> bool:
    """Whether one given argument (`present`, `value`) meets one required value `spec`."""
    if not present:
        return False
    found = matcher(spec)
    if found is None:
        return bool(value == spec)
    kind, operand = found
    if kind == "equals":
        return bool(value == operand)
    if kind == "any":
        return operand is True
    if not isinstance(value, str) or not isinstance(operand, str):
        return False
    if kind == "prefix":
        return value.startswith(operand)
    compiled = compiled_pattern(
        operand
    )  # a timed-out search (pathological pattern or argument): no match
    return compiled is not None and search(compiled, value, deadline) is not None


def args_match(required: Mapping[str, Any], given: Any) -> bool:
    """Whether a call's arguments meet every required argument."""
    given = given if isinstance(given, Mapping) else {}
    deadline = Deadline()  # the regex matchers of one call share CALL_BUDGET_S
    return all(
        arg_matches(spec, key in given, given.get(key), deadline) for key, spec in required.items()
    )


def check_matcher(spec: Any, path: str) -> None:
    """A matcher with a bad operand is a RulesError (lint reports it with its position)."""
    found = matcher(spec)
    if found is None:
        return
    kind, operand = found
    if kind in ("prefix", "regex") and not isinstance(operand, str):
        raise rules_error(f"'{kind}' takes a string, got {operand!r}", path)
    if kind == "any" and operand is not True:
        raise rules_error("'any' takes true", path, "write {any: true}, or drop the argument")
    if kind == "regex" and compiled_pattern(operand) is None:
        raise rules_error(
            "pattern is too long or does not compile",
            f"{path}.regex",
            "fix the regular expression (regex syntax)",
        )
