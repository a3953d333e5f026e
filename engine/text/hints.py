"""Small wording helpers shared by every message that names a user's mistake."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any, TypeGuard


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest choice, or "" when none is close."""
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def is_int(value: Any) -> TypeGuard[int]:
    """An integer that is not a bool (YAML and JSON `true` are bools, Python says they are ints)."""
    return isinstance(value, int) and not isinstance(value, bool)


def error_text(exc: BaseException) -> str:
    """`Type: message` for an exception, `Type` alone when its own `__str__` raises.

    Used wherever a plugin's or a tool's exception is written down (faults, error results,
    the history): a hostile `__str__` must not break the guard.
    """
    try:
        return f"{type(exc).__name__}: {exc}"
    except Exception:  # noqa: BLE001
        return type(exc).__name__


def safe_str(value: object) -> str:
    """`str(value)`, or its type's name when its own `__str__` raises (a tool name or call id
    a host passes must not break the guard)."""
    try:
        return str(value)
    except Exception:  # noqa: BLE001
        return type(value).__name__
