"""JSON parsing that survives integers too long for Python's int-from-text limit.

Since Python 3.11 (and 3.10.7) `int("1" * 5000)` raises `ValueError` (the
4,300-digit limit of `sys.set_int_max_str_digits`, a defence against quadratic
conversions), and `json.loads` with it. Model output and transcripts may hold
such numbers. Parsing is tried the fast way first; only a document that hits the
limit is parsed again, its long integers kept as `LongInt` (their digits, as
text), so nothing downstream ever converts them.
"""

from __future__ import annotations

import json
from typing import Any


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


def loads(text: str) -> Any:
    """`json.loads`, long integers kept as `LongInt`; syntax errors raise `JSONDecodeError`."""
    try:
        return _PLAIN.decode(text)
    except json.JSONDecodeError:
        raise
    except ValueError:  # the int-from-text limit (a syntax error is a JSONDecodeError)
        return _LONG.decode(text)


def raw_decode(text: str, pos: int) -> tuple[Any, int]:
    """`JSONDecoder.raw_decode` from `pos`, long integers kept as `LongInt`."""
    try:
        return _PLAIN.raw_decode(text, pos)
    except json.JSONDecodeError:
        raise
    except ValueError:  # the int-from-text limit (a syntax error is a JSONDecodeError)
        return _LONG.raw_decode(text, pos)
