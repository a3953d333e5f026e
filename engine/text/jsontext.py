"""JSON parsing that survives integers too long for Python's int-from-text limit.

Since Python 3.11 (and 3.10.7) `int("1" * 5000)` raises `ValueError` (the
4,300-digit limit of `sys.set_int_max_str_digits`, a defence against quadratic
conversions), and `json.loads` with it. Model output and transcripts may hold
such numbers. Parsing is tried the fast way first; only a document that hits the
limit is parsed again, its long integers kept as `LongInt` (their digits, as
text), so nothing downstream ever converts them.

How deep a document may nest differs between interpreters: 3.11's parser raises
`RecursionError` near 1,000 levels, 3.12 and 3.13 parse far deeper (their C
recursion limit), and the guard's own walks over a value would then be the ones to
overflow. So nesting is bounded here, the same on every Python: a document deeper
than `MAX_DEPTH` raises `TooDeep`, a `RecursionError`, which every reader already
treats as "nested too deeply". Only a text long enough to nest that deep is walked.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 400
"""Containers nested deeper than this are refused (`TooDeep`) on every Python."""


class TooDeep(RecursionError):
    """A JSON document nested deeper than `MAX_DEPTH`."""


_TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels"


class LongInt(str):
    """An integer literal longer than the interpreter converts: kept as its digits."""

    __slots__ = ()


def _int(digits: str) -> Any:
    try:
        return int(digits)
    except ValueError:
        return LongInt(digits)


_PLAIN = json.JSONDecoder()
_LONG = json.JSONDecoder(parse_int=_int)


def check_depth(value: Any, length: int) -> Any:
    """`value`, parsed from `length` characters of JSON; `TooDeep` past `MAX_DEPTH` levels.

    A text shorter than twice the limit cannot nest that deep (each level takes an
    opening and a closing character), so the common small document is not walked.
    """
    if length <= 2 * MAX_DEPTH:
        return value
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise TooDeep(_TOO_DEEP)
        if isinstance(item, dict):
            stack.extend(
                (child, depth + 1) for child in item.values() if isinstance(child, (dict, list))
            )
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item if isinstance(child, (dict, list)))
    return value


def loads(text: str) -> Any:
    """`json.loads`, long integers kept as `LongInt`; syntax errors raise `JSONDecodeError`,
    nesting past `MAX_DEPTH` raises `TooDeep`."""
    try:
        value = _PLAIN.decode(text)
    except json.JSONDecodeError:
        raise
    except ValueError:  # the int-from-text limit (a syntax error is a JSONDecodeError)
        value = _LONG.decode(text)
    except RecursionError:  # deeper than this interpreter's parser goes
        raise TooDeep(_TOO_DEEP) from None
    return check_depth(value, len(text))


def raw_decode(text: str, pos: int) -> tuple[Any, int]:
    """`JSONDecoder.raw_decode` from `pos`, long integers kept as `LongInt`, nesting bounded."""
    try:
        value, end = _PLAIN.raw_decode(text, pos)
    except json.JSONDecodeError:
        raise
    except ValueError:  # the int-from-text limit (a syntax error is a JSONDecodeError)
        value, end = _LONG.raw_decode(text, pos)
    except RecursionError:  # deeper than this interpreter's parser goes
        raise TooDeep(_TOO_DEEP) from None
    return check_depth(value, end - pos), end
