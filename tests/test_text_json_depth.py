"""JSON nesting is bounded alike on every Python (3.11 stops near 1,000 levels, 3.13 far past)."""

from __future__ import annotations

import json

import pytest

from loopguard.text import jsontext


def _nested(levels: int) -> str:
    return '{"a":' * (levels - 1) + "[1]" + "}" * (levels - 1)


def test_the_deepest_allowed_document_parses() -> None:
    value = jsontext.loads(_nested(jsontext.MAX_DEPTH + 1))  # depth counts from 0
    assert json.dumps(value).count("{") == jsontext.MAX_DEPTH


@pytest.mark.parametrize("levels", [jsontext.MAX_DEPTH + 2, 5_000])
def test_a_deeper_document_is_too_deep_whatever_the_interpreter(levels: int) -> None:
    with pytest.raises(jsontext.TooDeep, match=f"deeper than {jsontext.MAX_DEPTH}"):
        jsontext.loads(_nested(levels))


def test_raw_decode_bounds_the_value_it_reads_and_not_the_rest() -> None:
    text = "x" + _nested(jsontext.MAX_DEPTH + 2) + " [1]"
    with pytest.raises(RecursionError):  # TooDeep is a RecursionError: every reader handles it
        jsontext.raw_decode(text, 1)
    assert jsontext.raw_decode("  [1] " + "[" * 600, 2) == ([1], 5)


def test_long_but_flat_documents_are_not_refused() -> None:
    flat = json.dumps({f"k{i}": [i, {"v": "x" * 50}] for i in range(2_000)})
    assert len(jsontext.loads(flat)) == 2_000
