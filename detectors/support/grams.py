"""Character 3-gram sets and Jaccard similarity for the fuzzy doom-loop detector.

A gram set is computed once per call and kept in the detector's window, so a
comparison never rebuilds either side. Two exact representations, chosen by
length because each wins on its side of the line:

- a short text (< `ARRAY_FROM` characters): a frozenset of 3-tuples of
  characters (built by `zip` in C, about twice as fast as slicing);
- a long text: a sorted NumPy array of unique 63-bit gram codes (three 21-bit
  code points packed, so distinct grams never collide). Building it is ~20x
  faster than a Python set of 10 KB of grams, and the intersection of two
  sorted arrays is one linear merge (a stable sort of two sorted runs).

`similar()` first rejects pairs whose sizes alone rule out the similarity.

A text longer than `SAMPLE_CHARS` is judged by its first and last
`SAMPLE_CHARS // 2` characters: the gram array of a 100 MB argument would
take ~25x its size while it is built (and 8 bytes per gram while it is
kept), and exact repeats are caught by the digest of the whole text anyway.
So two long texts that differ only in their middle look alike here.
"""

from __future__ import annotations

from binascii import a2b_base64, b2a_base64
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

ARRAY_FROM = 256
SAMPLE_CHARS = 16384  # longer texts are compared by their head and tail (see above)


def _numpy() -> Any:
    """NumPy, imported on the first long text: only this detector uses it, and importing it
    eagerly would cost every process that imports loopguard (a hook runs on every tool call)
    0.15-0.25 s."""
    import numpy

    return numpy


def grams(text: str) -> Any:
    """The set of character 3-grams; a text shorter than 3 is one gram, empty is empty."""
    if len(text) > SAMPLE_CHARS:
        text = text[: SAMPLE_CHARS // 2] + text[-(SAMPLE_CHARS // 2) :]
    if len(text) < 3:
        return frozenset((tuple(text),)) if text else frozenset()
    if len(text) < ARRAY_FROM:
        return frozenset(zip(text, text[1:], text[2:], strict=False))
    np = _numpy()
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    points = points.astype(np.uint64)
    codes = (points[:-2] << np.uint64(42)) | (points[1:-1] << np.uint64(21)) | points[2:]
    codes.sort()
    if len(codes) > 1:
        codes = codes[np.concatenate(([True], codes[1:] != codes[:-1]))]
    return codes


def _as_array(gram_set: frozenset) -> np.ndarray:
    """A short text's gram set in the array form (only near the length boundary)."""
    codes = []
    for gram in gram_set:
        padded = ("\0",) * (3 - len(gram)) + gram
        codes.append((ord(padded[0]) << 42) | (ord(padded[1]) << 21) | ord(padded[2]))
    np = _numpy()
    return np.array(sorted(codes), dtype=np.uint64)


def _intersection(a: Any, b: Any) -> int:
    if isinstance(a, frozenset) and isinstance(b, frozenset):
        return len(a & b) if len(a) <= len(b) else len(b & a)
    if isinstance(a, frozenset):
        a = _as_array(a)
    if isinstance(b, frozenset):
        b = _as_array(b)
    np = _numpy()
    merged = np.concatenate((a, b))
    merged.sort(kind="stable")  # two sorted runs: a single linear merge
    return int(np.count_nonzero(merged[1:] == merged[:-1]))


def jaccard(a: Any, b: Any) -> float:
    """|A ∩ B| / |A ∪ B|; 0.0 when either side is empty."""
    if len(a) == 0 or len(b) == 0:
        return 0.0
    inter = _intersection(a, b)
    return inter / (len(a) + len(b) - inter)


def similar(a: Any, b: Any, threshold: float) -> bool:
    """True when jaccard(a, b) >= threshold, skipping the count when sizes rule it out."""
    size_a, size_b = len(a), len(b)
    if size_a == 0 or size_b == 0:
        return False
    if size_a <= size_b:
        if size_a < threshold * size_b:  # even a full overlap could not reach it
            return False
    elif size_b < threshold * size_a:
        return False
    inter = _intersection(a, b)
    return inter >= threshold * (size_a + size_b - inter)


# -- Deciding `similar` cheaply -----------------------------------------------------------
#
# The fuzzy detector asks one question per pair of calls: does the Jaccard similarity J of
# their gram sets reach the threshold? Building the exact gram set of a 10 KB text costs ten
# times the floor (an O(n log n) sort), so `Sketch` answers from bounds that are proved, and
# builds the exact sets only when no bound tells. The answer is always the exact one.
#
# - Lower bound (near duplicates): a gram of A at position i occurs in B when A[i:i+3] equals
#   B[i+o:i+o+3] for some offset o. Comparing the texts' code points at a few offsets (0,
#   the length difference, and offsets found by probing long unmatched stretches) marks such
#   positions in one vectorised pass. With u_A and u_B the positions left unmatched,
#   |A \ B| <= u_A and |B \ A| <= u_B, so J >= (g - u_A) / (g + u_B) for any g <= |A|.
# - A lower bound g on a set's size comes from a 2^16-bit bitmap of hashed grams (its
#   popcount: collisions only merge grams) or, for a text compared with an older one, from
#   that one's bound: |B| >= |A| - u_A. The bound is exact once the set is built.
# - Upper bound (unrelated texts): a bit set in A's bitmap but not in B's stands for at least
#   one gram of A missing from B. With d_A, d_B such bits and I <= min(|A| - d_A, |B| - d_B)
#   (a set's size at most its number of positions), J <= I / (I + d_A + d_B).
# - Sizes: J <= min(|A|, |B|) / max(|A|, |B|).
# - Between calls, Jaccard distance 1 - J is a metric: from J(C, B) and J(B, A) known,
#   J(C, A) lies in [J(C,B) + J(B,A) - 1, 1 - |J(C,B) - J(B,A)|] (see `triangle`).
#
# A bound decides only with a margin of EPS, far above the floating-point error of these
# few operations; otherwise the exact sets are compared, as `similar` does.

EPS = 1e-9
_BITS = 16  # bitmap of 2^16 bits: its popcount is within 6 % of a 10,000-character text's grams
_HASH = 0x9E3779B97F4A7C15  # Fibonacci hashing of the 63-bit gram codes
_PROBES = 4  # unmatched stretches probed per round for another offset
_PROBE_RUN = 32  # an unmatched stretch at least this long may be a shifted copy
_PROBE_CHARS = 16  # characters of a probe


def sample(text: str) -> str:
    """The part of a text its grams come from (all of it up to SAMPLE_CHARS)."""
    if len(text) > SAMPLE_CHARS:
        return text[: SAMPLE_CHARS // 2] + text[-(SAMPLE_CHARS // 2) :]
    return text


class Sketch:
    """What is known about one text's gram set, filled in as comparisons need it.

    `text` is the sampled text (None for a set stored without it); `exact` the gram set once
    built; `low` a lower bound on the set's size (its size once built); `points` the code
    points as an array, `bits` the packed hashed bitmap; `links` the similarity intervals to
    older calls' texts, by their seq (for `triangle`).
    """

    __slots__ = ("text", "exact", "low", "points", "bits", "links")

    def __init__(self, text: str | None, exact: Any = None) -> None:
        self.text = text
        self.exact = exact
        self.low = 0 if exact is None else len(exact)
        self.points: Any = None
        self.bits: Any = None
        self.links: dict[int, tuple[float, float]] = {}

    @classmethod
    def of(cls, kept: Any) -> Sketch:
        """A window's stored value: a (sampled) text, or a gram set stored without its text."""
        if isinstance(kept, str):
            return cls(sample(kept))
        return cls(None, kept)

    def size_high(self) -> int:
        """An upper bound on the gram set's size."""
        if self.exact is not None:
            return len(self.exact)
        text = self.text or ""
        return max(len(text) - 2, 1) if text else 0

    def gram_set(self) -> Any:
        if self.exact is None:
            self.exact = grams(self.text or "")
            self.low = len(self.exact)
        return self.exact

    def code_points(self) -> Any:
        if self.points is None:
            np = _numpy()
            text = self.text or ""
            if text.isascii():
                self.points = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
            else:
                raw = text.encode("utf-32-le", "surrogatepass")
                self.points = np.frombuffer(raw, dtype=np.uint32)
        return self.points

    def bitmap(self) -> Any:
        """The packed bitmap of hashed grams; also raises `low` to its popcount."""
        if self.bits is None:
            np = _numpy()
            if self.text is not None and len(self.text) >= 3:
                points = self.code_points().astype(np.uint64)
                codes = (points[:-2] << np.uint64(42)) | (points[1:-1] << np.uint64(21))
                codes |= points[2:]
            else:
                codes = _as_array(self.exact) if isinstance(self.exact, frozenset) else None
                codes = np.asarray(self.gram_set() if codes is None else codes, dtype=np.uint64)
            slots = (codes * np.uint64(_HASH)) >> np.uint64(64 - _BITS)
            marks = np.zeros(1 << _BITS, dtype=bool)
            marks[slots] = True
            self.bits = np.packbits(marks)
            self.low = max(self.low, int(np.count_nonzero(marks)))
        return self.bits


def _popcount(packed: Any) -> int:
    np = _numpy()
    if hasattr(np, "bitwise_count"):
        return int(np.bitwise_count(packed).sum())
    return int(np.unpackbits(packed).sum())


def _exactly(a: Sketch, b: Sketch, threshold: float) -> tuple[bool, float, float]:
    """`similar` on the exact sets, and the similarity itself (as a tight interval)."""
    set_a, set_b = a.gram_set(), b.gram_set()
    size_a, size_b = len(set_a), len(set_b)
    if size_a == 0 or size_b == 0:
        return False, 0.0, 0.0
    small, large = (size_a, size_b) if size_a <= size_b else (size_b, size_a)
    if small < threshold * large:  # as in `similar`: even a full overlap could not reach it
        return False, 0.0, small / large
    inter = _intersection(set_a, set_b)
    union = size_a + size_b - inter
    value = inter / union
    return inter >= threshold * union, max(0.0, value - EPS / 8), min(1.0, value + EPS / 8)


def _unmatched(a: Sketch, b: Sketch, enough: Any) -> tuple[int, int]:
    """Gram positions of A and of B not shown to occur in the other text (see above), at most;
    refined only until `enough(of_a, of_b)` says the bound is proved."""
    np = _numpy()
    x, y = a.code_points(), b.code_points()
    size_a, size_b = len(x), len(y)
    if size_a == size_b:
        differ = 3 * int(np.count_nonzero(x != y))  # a character is in at most 3 grams
        if differ <= _PROBE_RUN or enough(differ, differ):
            return differ, differ  # (few differences: no shifted stretch to look for)
        offsets = {0}
        same = x == y
        shown_a = same[:-2] & same[1:-1] & same[2:]
        shown_b = shown_a.copy()
    else:
        shown_a = np.zeros(size_a - 2, dtype=bool)
        shown_b = np.zeros(size_b - 2, dtype=bool)
        offsets = set()
        _mark(x, y, (0, size_b - size_a), offsets, shown_a, shown_b)
    text_a, text_b = a.text or "", b.text or ""
    for _ in range(2):  # edits that shift the text twice or more leave stretches in between
        gaps = np.flatnonzero(~shown_a)
        missing = len(gaps), len(shown_b) - int(np.count_nonzero(shown_b))
        if len(gaps) < _PROBE_RUN or enough(*missing):
            return missing
        cuts = np.flatnonzero(np.diff(gaps) > 1)
        starts = gaps[np.concatenate(([0], cuts + 1))]
        ends = gaps[np.concatenate((cuts, [len(gaps) - 1]))]
        lengths = ends - starts
        found = set()
        low, high = min(offsets), max(offsets)
        for run in np.argsort(lengths)[::-1][:_PROBES]:
            if lengths[run] < _PROBE_RUN:
                break
            at = int(starts[run] + ends[run]) // 2
            probe = text_a[at : at + _PROBE_CHARS]
            where = text_b.find(probe, max(0, at + low - 256), at + high + 256 + _PROBE_CHARS)
            if where >= 0 and where - at not in offsets:
                found.add(where - at)
        if not found:
            break
        _mark(x, y, tuple(found), offsets, shown_a, shown_b)
    return (
        len(shown_a) - int(np.count_nonzero(shown_a)),
        len(shown_b) - int(np.count_nonzero(shown_b)),
    )


def _mark(
    x: Any, y: Any, new: tuple[int, ...], offsets: set[int], shown_a: Any, shown_b: Any
) -> None:
    """Mark the gram positions that match at each offset (A at i against B at i + offset)."""
    size_a, size_b = len(x), len(y)
    for offset in new:
        if offset in offsets:
            continue
        offsets.add(offset)
        start, stop = max(0, -offset), min(size_a, size_b - offset)
        if stop - start < 3:
            continue
        same = x[start:stop] == y[start + offset : stop + offset]
        shown = same[:-2] & same[1:-1] & same[2:]
        shown_a[start : start + len(shown)] |= shown
        shown_b[start + offset : start + offset + len(shown)] |= shown


def judge(a: Sketch, b: Sketch, threshold: float) -> tuple[bool, float, float]:
    """Whether jaccard(a, b) >= threshold (as `similar` decides it), with an interval that
    holds the similarity; the exact gram sets are built only when no bound tells."""
    if a.exact is not None and b.exact is not None:
        return _exactly(a, b, threshold)
    text_a, text_b = a.text, b.text
    if text_a is None or text_b is None or min(len(text_a), len(text_b)) < ARRAY_FROM:
        if text_a is not None and text_a == text_b:
            return (True, 1.0, 1.0) if text_a else (False, 0.0, 0.0)
        return _exactly(a, b, threshold)  # a short text's grams are cheap
    if text_a == text_b:
        return True, 1.0, 1.0
    low, high = 0.0, 1.0
    if max(a.low, b.low):
        high = min(a.size_high(), b.size_high()) / max(a.low, b.low)
        if high < threshold - EPS:
            return False, low, high
    if min(len(text_a), len(text_b)) >= (threshold - 0.05) * max(len(text_a), len(text_b)):

        def enough(miss_a: int, miss_b: int) -> bool:
            """Whether the bound below would prove it already (so refining can stop)."""
            at_least = threshold + EPS
            low_a, low_b = a.low, b.low
            return bool(
                (low_a and low_a - miss_a >= at_least * (low_a + miss_b))
                or (low_b and low_b - miss_b >= at_least * (low_b + miss_a))
            )

        miss_a, miss_b = _unmatched(a, b, enough)
        most = a.size_high()
        if not (a.low or b.low) and most - miss_a >= threshold * (most + miss_b):
            a.bitmap()  # a bound on the size could prove it: the popcount is one
        if a.low:
            low = max(low, (a.low - miss_a) / (a.low + miss_b))
            b.low = max(b.low, a.low - miss_a)
        if b.low:
            low = max(low, (b.low - miss_b) / (b.low + miss_a))
            a.low = max(a.low, b.low - miss_b)
        if low >= threshold + EPS:
            return True, low, high
    bits_a, bits_b = a.bitmap(), b.bitmap()
    only_a = _popcount(bits_a & ~bits_b)
    only_b = _popcount(bits_b & ~bits_a)
    common = max(0, min(a.size_high() - only_a, b.size_high() - only_b))
    high = min(high, common / (common + only_a + only_b or 1))
    if high < threshold - EPS:
        return False, low, high
    return _exactly(a, b, threshold)


def triangle(first: tuple[float, float], second: tuple[float, float]) -> tuple[float, float]:
    """The interval of J(C, A) from intervals of J(C, B) and J(B, A) (Jaccard distance is a
    metric on non-empty sets)."""
    low = max(0.0, first[0] + second[0] - 1.0)
    apart = max((1.0 - first[1]) - (1.0 - second[0]), (1.0 - second[1]) - (1.0 - first[0]))
    return low, min(1.0, 1.0 - max(0.0, apart))


_MASK = (1 << 21) - 1


def pack(value: Any) -> list[Any]:
    """A text or gram set as JSON data, exactly (for a stored session state)."""
    if isinstance(value, str):
        return ["t", value]
    if isinstance(value, frozenset):
        return ["s", ["".join(g) for g in value]]
    np = _numpy()
    mask = np.uint64(_MASK)
    codes = np.asarray(value, dtype=np.uint64)
    parts = np.stack(
        (codes >> np.uint64(42), (codes >> np.uint64(21)) & mask, codes & mask), axis=1
    )
    top = int(parts.max()) if len(codes) else 0
    dtype = np.uint8 if top < 256 else np.uint16 if top < 65536 else np.uint32
    return [
        "a",
        np.dtype(dtype).itemsize,
        b2a_base64(parts.astype(dtype).tobytes(), newline=False).decode(),
    ]


def unpack(row: list[Any]) -> Any:
    """What `pack` stored; ValueError for a form it does not know."""
    kind = row[0]
    if kind == "t":
        return str(row[1])
    if kind == "s":
        return frozenset(tuple(str(g)) for g in row[1])
    if kind != "a" or row[1] not in (1, 2, 4):
        raise ValueError(f"unknown gram form {kind!r}")
    np = _numpy()
    dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32}[row[1]]
    parts = np.frombuffer(a2b_base64(row[2]), dtype=dtype).reshape(-1, 3).astype(np.uint64)
    return (parts[:, 0] << np.uint64(42)) | (parts[:, 1] << np.uint64(21)) | parts[:, 2]
