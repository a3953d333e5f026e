"""The fuzzy detector's cheap bounds decide `similar` exactly as the gram sets do.

`judge` answers from proved bounds (matched positions, counted sizes) and builds the exact
sets only when they cannot tell; `triangle` bounds a pair from two others. Both must give the
verdict and an interval that the exact Jaccard similarity agrees with, for any texts: near
duplicates with substitutions, insertions and deletions, unrelated texts, repetitive texts,
non-ASCII texts, texts past the sampling length. Below them, `lanes.unmatched` must bound the
grams each text lacks at every stage of its refinement, `grams.distinct` count a set without
building it, and NumPy must never be imported.
"""

from __future__ import annotations

import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopguard.detectors.support.grams import (
    SAMPLE_CHARS,
    Sketch,
    distinct,
    gram_codes,
    gram_map,
    grams,
    jaccard,
    judge,
    sample,
    similar,
    triangle,
)
from loopguard.detectors.support.lanes import NARROW, WIDE, unmatched

THRESHOLDS = (0.0, 0.5, 0.8, 0.9, 0.95, 0.97, 0.99, 1.0)


def edited(text: str, rng: random.Random, edits: int, alphabet: str) -> str:
    """`text` with `edits` random substitutions, insertions, deletions or moved blocks."""
    chars = list(text)
    for _ in range(edits):
        kind = rng.random()
        where = rng.randrange(len(chars) + 1)
        if kind < 0.5 and where < len(chars):
            chars[where] = rng.choice(alphabet)
        elif kind < 0.7:
            chars[where:where] = rng.choices(alphabet, k=rng.randint(1, 40))
        elif kind < 0.9:
            del chars[where : where + rng.randint(1, 40)]
        else:  # a block moved elsewhere
            size = rng.randint(5, 200)
            block = chars[where : where + size]
            del chars[where : where + size]
            to = rng.randrange(len(chars) + 1)
            chars[to:to] = block
    return "".join(chars)


def check_pair(a: str, b: str, sketch_a: Sketch, sketch_b: Sketch, threshold: float) -> None:
    exact_a, exact_b = grams(a), grams(b)
    verdict, low, high = judge(sketch_a, sketch_b, threshold)
    assert verdict == similar(exact_a, exact_b, threshold), (threshold, low, high)
    value = jaccard(exact_a, exact_b)
    assert low - 1e-12 <= value <= high + 1e-12
    # what the sketches learnt stays true
    for sketch, exact in ((sketch_a, exact_a), (sketch_b, exact_b)):
        assert 0 <= sketch.low <= len(exact) <= sketch.high


def check_bounds(a: str, b: str) -> None:
    exact_a, exact_b = grams(a), grams(b)
    for stop_at_once in (False, True):  # the cheapest stage, and full refinement
        got = unmatched(Sketch(a), Sketch(b), lambda _a, _b, stop=stop_at_once: stop)
        assert got[0] >= len(exact_a - exact_b) and got[1] >= len(exact_b - exact_a)


ALPHABETS = {
    "letters": "abcdefghijklmnopqrstuvwxyz     \n",
    "few": "ab \n",
    "json": 'abcdefghij0123456789{}[]":, \\n',
    "wide": "abcdéü中文字🙂 \n",
    "latin": "aàbçdé \n\xff",
}


@pytest.mark.slow
@settings(max_examples=250, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    alphabet=st.sampled_from(sorted(ALPHABETS)),
    length=st.integers(200, 4000),
    edits=st.integers(0, 30),
    threshold=st.sampled_from(THRESHOLDS),
    known=st.booleans(),
)
def test_judge_decides_like_the_exact_sets(
    seed: int, alphabet: str, length: int, edits: int, threshold: float, known: bool
) -> None:
    rng = random.Random(seed)
    chars = ALPHABETS[alphabet]
    base = "".join(rng.choices(chars, k=length))
    a = edited(base, rng, rng.randint(0, 5), chars)
    b = edited(a, rng, edits, chars)
    sketch_a, sketch_b = Sketch.of(a), Sketch.of(b)
    if known:  # a lower bound learnt from an earlier comparison (here: the true size)
        sketch_a.low = len(grams(a)) - rng.randint(0, 50)
        sketch_a.low = max(sketch_a.low, 0)
    check_pair(a, b, sketch_a, sketch_b, threshold)
    # asked again, with what the first answer taught both sketches
    check_pair(b, a, sketch_b, sketch_a, threshold)
    # and the position bounds below judge, at every stage of their refinement
    check_bounds(a, b)
    check_bounds(b, a)


def test_a_chain_of_edits_keeps_every_verdict_exact() -> None:
    """Each text an edit of the last (as an agent rewrites a file): the size bounds carried
    along the chain stay below the true sizes, and every verdict is the exact one."""
    rng = random.Random(7)
    chars = ALPHABETS["letters"]
    text = "".join(rng.choices(chars, k=3000))
    older: list[tuple[str, Sketch]] = []
    for step in range(30):
        text = edited(text, rng, rng.randint(0, 4), chars)
        mine = Sketch.of(text)
        for other_text, other in older[-5:]:
            check_pair(other_text, text, other, mine, 0.95)
        older.append((text, mine))
        assert step < 1 or mine.exact is None or mine.low == len(mine.exact)


def test_unrelated_and_repetitive_texts() -> None:
    rng = random.Random(3)
    unrelated = ["".join(rng.choices(ALPHABETS["letters"], k=5000)) for _ in range(2)]
    repetitive = ["abc " * 900, "abc " * 899 + "abd "]
    single = ["a" * 2000, "a" * 1999 + "b"]
    for a, b in (unrelated, repetitive, single, (unrelated[0], repetitive[0])):
        for threshold in THRESHOLDS:
            check_pair(a, b, Sketch.of(a), Sketch.of(b), threshold)


def test_texts_past_the_sampling_length_compare_their_samples() -> None:
    rng = random.Random(5)
    body = "".join(rng.choices(ALPHABETS["letters"], k=SAMPLE_CHARS * 3))
    changed_middle = body[: len(body) // 2] + "x" * 500 + body[len(body) // 2 + 500 :]
    assert sample(body) == sample(changed_middle)
    verdict, low, high = judge(Sketch.of(body), Sketch.of(changed_middle), 1.0)
    assert verdict and low == high == 1.0
    tail_edit = body[:-100] + "y" * 100
    check_pair(sample(body), sample(tail_edit), Sketch.of(body), Sketch.of(tail_edit), 0.95)


def test_sets_stored_without_their_text_compare_exactly() -> None:
    rng = random.Random(9)
    a = "".join(rng.choices(ALPHABETS["wide"], k=3000))
    b = edited(a, rng, 10, ALPHABETS["wide"])
    for threshold in THRESHOLDS:
        check_pair(a, b, Sketch.of(grams(a)), Sketch.of(b), threshold)
        check_pair(a, b, Sketch.of(a), Sketch.of(grams(b)), threshold)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), edits=st.tuples(st.integers(0, 40), st.integers(0, 40)))
def test_triangle_bounds_hold(seed: int, edits: tuple[int, int]) -> None:
    """From J(C, B) and J(B, A), the interval `triangle` gives holds J(C, A)."""
    rng = random.Random(seed)
    chars = ALPHABETS["letters"]
    a = "".join(rng.choices(chars, k=rng.randint(300, 2000)))
    b = edited(a, rng, edits[0], chars)
    c = edited(b, rng, edits[1], chars)
    set_a, set_b, set_c = grams(a), grams(b), grams(c)
    cb, ba = jaccard(set_c, set_b), jaccard(set_b, set_a)
    low, high = triangle((cb, cb), (ba, ba))
    assert low - 1e-12 <= jaccard(set_c, set_a) <= high + 1e-12
    _, *first = judge(Sketch.of(b), Sketch.of(c), 0.95)
    _, *second = judge(Sketch.of(a), Sketch.of(b), 0.95)
    low, high = triangle((first[0], first[1]), (second[0], second[1]))
    assert low - 1e-12 <= jaccard(set_c, set_a) <= high + 1e-12


# -- below judge: positions, counted sizes -------------------------------------------


def test_one_insertion_or_deletion_is_bounded_tightly() -> None:
    """An insertion (or deletion) with substitutions around it: the cut between the two
    alignments leaves only the edited positions unmatched."""
    rng = random.Random(11)
    base = "".join(rng.choices(ALPHABETS["letters"], k=5000))
    for cut, insert in ((100, "xyz"), (2500, "q"), (4990, "0123456789")):
        changed = list(base[:cut] + insert + base[cut:])
        for where in (50, 4000):
            changed[where] = "#"
        b = "".join(changed)
        for x, y in ((base, b), (b, base)):
            miss_x, miss_y = unmatched(Sketch(x), Sketch(y), lambda _a, _b: True)
            assert max(miss_x, miss_y) <= 3 * 8 * 2 + 2 + len(insert)  # (8 bits a character)
            check_bounds(x, y)


def test_texts_beyond_latin_1_use_wide_lanes() -> None:
    narrow, wide = Sketch("abc" * 200), Sketch("ab中" * 200)
    assert narrow.encoded(NARROW) is not None and wide.encoded(NARROW) is None
    assert wide.lanes(WIDE) == int.from_bytes(("ab中" * 200).encode("utf-32-le"), "little")
    check_bounds("abc" * 200, "ab中" * 200)
    check_bounds("ab\ud800c" * 100, "ab\ud800d" * 100)  # (a lone surrogate still has lanes)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("abé\xff中🙂 \n")), min_size=3, max_size=400))
def test_distinct_counts_the_gram_set(text: str) -> None:
    assert distinct(text) == len(grams(text))


def test_a_size_bound_counted_from_a_prefix_holds() -> None:
    rng = random.Random(5)
    text = "".join(rng.choices(ALPHABETS["letters"], k=4000))
    for needed in (10, 500, 2000, 10_000):
        sketch = Sketch(text)
        sketch.count_to(needed)
        assert sketch.low <= len(grams(text)) <= sketch.high
        assert sketch.low >= min(needed, len(grams(text)))
        assert sketch.exact is None  # (counted, not built)


@pytest.mark.slow  # (a process of its own)
def test_numpy_is_never_imported() -> None:
    """Neither `import loopguard` nor comparing long texts loads NumPy (it is no dependency)."""
    script = """
import sys
import loopguard
guard = loopguard.Guard.default()
assert "numpy" not in sys.modules, "import loopguard"
session = guard.session("s")
body = "".join(chr(97 + (i * 7) % 26) for i in range(6000))
for i in range(4):
    args = {"path": "notes.md", "content": body[:i] + "x" + body[i:]}
    session.before_call("write_file", args, call_id=str(i))
    session.after_call("write_file", args, result="error: disk full", call_id=str(i))
assert "numpy" not in sys.modules, "comparing long texts"
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_gram_maps_bound_the_missing_grams() -> None:
    """A bit of A's map missing from B's is a gram of A missing from B; a map's popcount is at
    most the set's size."""
    rng = random.Random(13)
    for alphabet in ("letters", "json", "latin"):
        chars = ALPHABETS[alphabet]
        a = "".join(rng.choices(chars, k=3000))
        for b in (edited(a, rng, 20, chars), "".join(rng.choices(chars, k=3000))):
            map_a = gram_map(gram_codes(a.encode("latin-1")))
            map_b = gram_map(gram_codes(b.encode("latin-1")))
            assert (map_a & ~map_b).bit_count() <= len(grams(a) - grams(b))
            assert map_a.bit_count() <= len(grams(a))
            assert gram_codes(a.encode("latin-1")) and len(gram_codes(b.encode("latin-1"))) == len(
                grams(b)
            )
