"""Gram sets in either representation give the exact Jaccard similarity doom_loop_fuzzy uses."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopguard.detectors.support.grams import EXACT_BELOW, grams, jaccard, similar


def plain(text: str) -> set[str]:
    if len(text) < 3:
        return {text} if text else set()
    return {text[i : i + 3] for i in range(len(text) - 2)}


def expected(a: str, b: str) -> float:
    x, y = plain(a), plain(b)
    return len(x & y) / len(x | y) if x and y else 0.0


alphabet = st.sampled_from(list("ab中c 🙂x"))
near_boundary = st.integers(min_value=0, max_value=EXACT_BELOW + 40)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(data=st.data(), length=near_boundary)
def test_jaccard_is_exact_across_representations(data: st.DataObject, length: int) -> None:
    a = "".join(data.draw(st.lists(alphabet, min_size=length, max_size=length)))
    edits = data.draw(st.lists(st.tuples(st.integers(0, 10_000), alphabet), max_size=4))
    b = list(a[: max(0, length + data.draw(st.integers(-12, 12)))])
    for where, char in edits:
        if b:
            b[where % len(b)] = char
    text_b = "".join(b)
    value = jaccard(grams(a), grams(text_b))
    assert abs(value - expected(a, text_b)) < 1e-12
    for threshold in (0.5, 0.8, 1.0):
        assert similar(grams(a), grams(text_b), threshold) == (
            expected(a, text_b) >= threshold - 1e-12 and expected(a, text_b) > 0
        )
