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
    the history): a hostile `__str__` must not break the guard, not even with `SystemExit`
    (only `KeyboardInterrupt` goes through).
    """
    try:
        return f"{type(exc).__name__}: {safe_str(exc, raising=True)}"
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001
        return type(exc).__name__


def safe_str(value: object, raising: bool = False) -> str:
    """`str(value)` as an exact `str`, or its type's name when its own `__str__` raises (a tool
    name or call id a host passes must not break the guard, even by raising `SystemExit`).

    A `str` subclass gives its text without calling its own `__str__`, and a `__str__` that
    returns a `str` subclass is copied to a plain `str`: such a subclass's methods (`__eq__`,
    `__format__`, ...) may raise wherever the text is used later. `raising=True` lets the
    exception through instead (for `error_text`).
    """
    if type(value) is str:
        return value
    if issubclass(type(value), str):  # type() and issubclass never run the value's own code
        return str.__str__(value)  # type: ignore[arg-type]  # its text, as a plain str
    try:
        return str.__str__(str(value))
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001
        if raising:
            raise
        return type(value).__name__
