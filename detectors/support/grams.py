"""Character 3-gram sets and their Jaccard similarity, for the fuzzy doom-loop detector.

The grams of a text are its substrings of three characters (a text shorter than 3 is one gram,
itself; the empty text has none), and two texts are as similar as the Jaccard index
|A ∩ B| / |A ∪ B| of their gram sets (0.0 when either is empty). `grams`, `jaccard` and
`similar` are that definition, on exact sets (frozensets of character tuples).

A text longer than `SAMPLE_CHARS` is judged by its first and last `SAMPLE_CHARS // 2`
characters: exact repeats are caught by the digest of the whole text anyway, and the cost of a
comparison stays bounded. So two long texts that differ only in their middle look alike here.

The detector asks one question of each pair of calls, whether the similarity reaches the
threshold, and an exact gram set costs a Python object per gram (about 100 times the text's
size and a microsecond per 10 characters). So `judge` answers from bounds it proves on `Sketch`es
of the texts, and builds the exact sets only when no bound tells; the answer is always the
exact one.
"""

from __future__ import annotations

from array import array
from binascii import a2b_base64
from typing import Any

from loopguard.detectors.support.lanes import NARROW, unmatched

SAMPLE_CHARS = 16384  # longer texts are compared by their head and tail (see above)
EXACT_BELOW = 256  # texts shorter than this are compared by their exact sets (cheap enough)
NEAR = 0.05  # texts whose lengths differ by more than threshold - NEAR are not aligned


def sample(text: str) -> str:
    """The part of a text its grams come from (all of it up to SAMPLE_CHARS)."""
    if len(text) > SAMPLE_CHARS:
        return text[: SAMPLE_CHARS // 2] + text[-(SAMPLE_CHARS // 2) :]
    return text


def grams(text: str) -> frozenset[tuple[str, ...]]:
    """The set of character 3-grams (of the sample); a text shorter than 3 is one gram, empty
    is empty."""
    text = sample(text)
    if len(text) < 3:
        return frozenset((tuple(text),)) if text else frozenset()
    return frozenset(zip(text, text[1:], text[2:], strict=False))


def distinct(text: str) -> int:
    """len(grams(text)) for a text of 3+ characters, counted without building tuples."""
    try:
        raw = text.encode("latin-1")
    except UnicodeEncodeError:
        return len(set(zip(text, text[1:], text[2:], strict=False)))
    return len(gram_codes(raw))


def gram_codes(raw: bytes) -> frozenset[int]:
    """The grams of a Latin-1 text (3+ bytes) as 24-bit integers, their three bytes: the same
    set as `grams`, about twice as fast to build."""
    count = len(raw) - 2
    codes = bytearray(4 * count)  # gram i in bytes 4i..4i+2 of a 32-bit integer
    codes[0::4], codes[1::4], codes[2::4] = raw[:count], raw[1 : count + 1], raw[2:]
    return frozenset(memoryview(codes).cast("I"))


_FIBONACCI = 0x9E3779B1  # hashing of a gram's code to 16 bits (Fibonacci hashing)


def gram_map(codes: frozenset[int]) -> int:
    """A 2^16-bit map with the bit of each gram code (`gram_codes`) set; a bit set in one map
    and not in another stands for at least one gram the second set lacks."""
    bits = bytearray(8192)
    for code in codes:
        slot = (code * _FIBONACCI & 0xFFFFFFFF) >> 16
        bits[slot >> 3] |= 1 << (slot & 7)
    return int.from_bytes(bits, "little")


def jaccard(a: frozenset[Any], b: frozenset[Any]) -> float:
    """|A ∩ B| / |A ∪ B|; 0.0 when either side is empty."""
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def similar(a: frozenset[Any], b: frozenset[Any], threshold: float) -> bool:
    """True when jaccard(a, b) >= threshold, skipping the count when sizes rule it out."""
    size_a, size_b = len(a), len(b)
    if not size_a or not size_b:
        return False
    if min(size_a, size_b) < threshold * max(size_a, size_b):  # a full overlap could not do
        return False
    inter = len(a & b)
    return inter >= threshold * (size_a + size_b - inter)


# -- Deciding `similar` cheaply -----------------------------------------------------------
#
# - Sizes: J <= min(|A|, |B|) / max(|A|, |B|). A set has at most as many grams as its text has
#   positions (`high`); a lower bound (`low`) is the number of distinct grams in a prefix of the
#   text (the whole text: the exact size), or is carried over from an older text (below).
# - Lower bound (near duplicates): a gram of A at position i occurs in B when A[i:i+3] equals
#   B[i+o:i+o+3] for some offset o; `lanes.unmatched` counts the positions u_A, u_B of either
#   text not shown to match at the offsets an edit leaves. Then |A \ B| <= u_A and
#   |B \ A| <= u_B, so J >= (g - u_A) / (g + u_B) for any g <= |A|, and |B| >= |A| - u_A.
# - Between calls, Jaccard distance 1 - J is a metric: from J(C, B) and J(B, A) known,
#   J(C, A) lies in [J(C,B) + J(B,A) - 1, 1 - |J(C,B) - J(B,A)|] (see `triangle`).
# - Otherwise the exact sets, built for the comparison and dropped after the call (`release`).
#
# A bound decides only with a margin of EPS, far above the floating-point error of these few
# operations; otherwise the exact sets are compared, as `similar` does.

EPS = 1e-9


class Sketch:
    """What is known about one text's gram set, filled in as comparisons need it.

    `text` is the sampled text (None for a set stored without it); `low` <= |gram set| <=
    `high`; `exact` the gram set while comparisons need it (`codes` the same as integers);
    `raw` the text encoded `bits` a character and `number` the same as an integer (see
    `lanes`), `narrow` False once it proved to go beyond Latin-1; `map` its map of hashed
    grams (`gram_map`); `links` the similarity intervals to older calls' texts, by their seq
    (for `triangle`).
    """

    __slots__ = (
        "text",
        "exact",
        "codes",
        "low",
        "high",
        "raw",
        "bits",
        "number",
        "narrow",
        "map",
        "links",
    )

    def __init__(self, text: str | None, exact: frozenset[Any] | None = None) -> None:
        self.text = text
        self.exact = exact
        self.codes: frozenset[int] | None = None
        if exact is not None:
            self.low = self.high = len(exact)
        else:
            size = len(text or "")
            self.low = 1 if size else 0  # a text has at least one gram, at most one a position
            self.high = max(size - 2, 1) if size else 0
        self.raw = b""
        self.bits = 0  # (not encoded yet)
        self.number: int | None = None
        self.narrow = True  # (until its text proves not to be Latin-1)
        self.map: int | None = None
        self.links: dict[int, tuple[float, float]] = {}

    @classmethod
    def of(cls, kept: Any) -> Sketch:
        """A window's stored value: a (sampled) text, or a gram set stored without its text."""
        if isinstance(kept, str):
            return cls(sample(kept))
        return cls(None, kept)

    def gram_set(self, coded: bool = False) -> frozenset[Any]:
        """The exact gram set, kept until `release`: of tuples, or `coded` as integers
        (`gram_codes`, for a Latin-1 text)."""
        if coded:
            if self.codes is None:
                self.codes = gram_codes(self.encoded(NARROW) or b"")
                self.low = self.high = len(self.codes)
            return self.codes
        if self.exact is None:
            self.exact = grams(self.text or "")
            self.low = self.high = len(self.exact)
        return self.exact

    def release(self) -> None:
        """Drop the exact sets (their size stays known): a window keeps its sketches between
        calls, and a set takes about 100 times its text's size."""
        self.codes = None
        if self.text is not None:
            self.exact = None

    def encoded(self, bits: int) -> bytes | None:
        """The text's bytes, `bits` a character: Latin-1 for `lanes.NARROW` (None when the text
        goes beyond it), UTF-32 for `lanes.WIDE`."""
        if self.bits != bits:
            text = self.text or ""
            if bits == NARROW:
                if not self.narrow:
                    return None
                try:
                    raw = text.encode("latin-1")
                except UnicodeEncodeError:
                    self.narrow = False
                    return None
            else:
                raw = text.encode("utf-32-le", "surrogatepass")
            self.raw, self.bits, self.number = raw, bits, None
        return self.raw

    def lanes(self, bits: int) -> int:
        """The text as an integer, character i in lane i of `bits` bits (`encoded(bits)` read
        as one little-endian number; 0 when there is no such encoding)."""
        if self.number is None or self.bits != bits:
            self.number = int.from_bytes(self.encoded(bits) or b"", "little")
        return self.number

    def gram_map(self) -> int:
        """The map of the (Latin-1) text's hashed grams, 8 KiB kept between calls, made from
        its exact set (so its size is known from then on)."""
        if self.map is None:
            self.map = gram_map(self.gram_set(coded=True))
        return self.map

    def count_to(self, needed: int) -> None:
        """Raise `low` to `needed` if the set is that large, counting the distinct grams of
        ever longer prefixes of the text (all of it: the exact size)."""
        text = self.text
        if text is None or self.low >= needed or self.low == self.high:
            return
        chars = needed + 2
        while chars < len(text):
            count = distinct(text[:chars])
            self.low = max(self.low, count)
            if count >= needed:
                return
            chars = max(2 * chars, chars * needed // max(count, 1) + 64)
        if self.encoded(NARROW) is not None:
            self.gram_set(coded=True)  # (kept until `release`, for `_exactly`)
        else:
            self.low = self.high = distinct(text)


def judge(a: Sketch, b: Sketch, threshold: float) -> tuple[bool, float, float]:
    """Whether jaccard(a, b) >= threshold (as `similar` decides it), with an interval that
    holds the similarity; the exact gram sets are built only when no bound tells."""
    text_a, text_b = a.text, b.text
    if (a.exact is not None and b.exact is not None) or text_a is None or text_b is None:
        return _exactly(a, b, threshold)
    if text_a == text_b:
        return (True, 1.0, 1.0) if text_a else (False, 0.0, 0.0)
    high = _by_sizes(a, b, threshold)
    if high < threshold - EPS:
        return False, 0.0, high
    size_a, size_b = len(text_a), len(text_b)
    if min(size_a, size_b) < EXACT_BELOW:
        return _exactly(a, b, threshold)
    if min(size_a, size_b) >= (threshold - NEAR) * max(size_a, size_b):
        low = _near(a, b, threshold)
        if low >= threshold + EPS:
            return True, low, high
    if a.encoded(NARROW) is not None and b.encoded(NARROW) is not None:
        # Maps of hashed grams, kept between calls with the exact sizes, tell texts that are
        # alike but not near duplicates apart: a bit in A's map and not in B's is at least one
        # gram of A missing from B, so with d_A and d_B such bits, J <= I / (I + d_A + d_B)
        # for I = min(|A| - d_A, |B| - d_B).
        map_a, map_b = a.gram_map(), b.gram_map()
        only_a, only_b = (map_a & ~map_b).bit_count(), (map_b & ~map_a).bit_count()
        common = max(0, min(a.high - only_a, b.high - only_b))
        high = min(high, common / (common + only_a + only_b or 1))
        if high < threshold - EPS:
            return False, 0.0, high
    return _exactly(a, b, threshold)


def _by_sizes(a: Sketch, b: Sketch, threshold: float) -> float:
    """J <= min(|A|, |B|) / max(|A|, |B|), first raising the longer text's size bound when the
    lengths alone leave room for J < threshold (a short text against a long one)."""
    size_a, size_b = len(a.text or ""), len(b.text or "")
    short, long = (a, b) if size_a <= size_b else (b, a)
    limit = threshold - EPS
    if limit > 0 and min(size_a, size_b) - 2 < limit * (max(size_a, size_b) - 2):
        long.count_to(int(short.high / limit) + 1)
    return min(1.0, min(a.high, b.high) / max(a.low, b.low, 1))


def _near(a: Sketch, b: Sketch, threshold: float) -> float:
    """A lower bound on J from the positions the texts share (0.0 when it proves nothing); it
    also carries each set's size bound over to the other (|B| >= |A| - u_A)."""
    at_least = threshold + EPS
    counted = at_least >= 1  # (J = 1 takes equal sets: the exact ones)

    def proves(miss_a: int, miss_b: int) -> bool:
        low_a, low_b = a.low, b.low
        return bool(
            (low_a and low_a - miss_a >= at_least * (low_a + miss_b))
            or (low_b and low_b - miss_b >= at_least * (low_b + miss_a))
        )

    def enough(miss_a: int, miss_b: int) -> bool:
        """Whether the bound proves it (so refining can stop), once A's size bound is as large
        as it can be when that would prove it, g >= (u_A + t u_B) / (1 - t): the exact size,
        counted, as the bound is passed on down a chain of edits (less what each one changed,
        so the larger it starts, the longer it lasts)."""
        nonlocal counted
        if proves(miss_a, miss_b):
            return True
        if not counted:
            counted = True
            if (miss_a + at_least * miss_b) / (1 - at_least) < a.high:
                a.count_to(a.high)
                return proves(miss_a, miss_b)
        return False

    miss_a, miss_b = unmatched(a, b, enough)
    low = 0.0
    if a.low:
        low = max(low, (a.low - miss_a) / (a.low + miss_b))
        b.low = max(b.low, a.low - miss_a)
    if b.low:
        low = max(low, (b.low - miss_b) / (b.low + miss_a))
        a.low = max(a.low, b.low - miss_b)
    return low


def _exactly(a: Sketch, b: Sketch, threshold: float) -> tuple[bool, float, float]:
    """`similar` on the exact sets (as integer codes when both texts are long and Latin-1), and
    the similarity itself (as a tight interval)."""
    text_a, text_b = a.text or "", b.text or ""
    if min(len(text_a), len(text_b)) >= EXACT_BELOW and a.encoded(NARROW) and b.encoded(NARROW):
        set_a, set_b = a.gram_set(coded=True), b.gram_set(coded=True)
    else:
        set_a, set_b = a.gram_set(), b.gram_set()
    size_a, size_b = len(set_a), len(set_b)
    if not size_a or not size_b:
        return False, 0.0, 0.0
    small, large = min(size_a, size_b), max(size_a, size_b)
    if small < threshold * large:  # as in `similar`: even a full overlap could not reach it
        return False, 0.0, small / large
    inter = len(set_a & set_b)
    union = size_a + size_b - inter
    value = inter / union
    return inter >= threshold * union, max(0.0, value - EPS / 8), min(1.0, value + EPS / 8)


def triangle(first: tuple[float, float], second: tuple[float, float]) -> tuple[float, float]:
    """The interval of J(C, A) from intervals of J(C, B) and J(B, A) (Jaccard distance is a
    metric on non-empty sets)."""
    low = max(0.0, first[0] + second[0] - 1.0)
    apart = max((1.0 - first[1]) - (1.0 - second[0]), (1.0 - second[1]) - (1.0 - first[0]))
    return low, min(1.0, 1.0 - max(0.0, apart))


def pack(value: Any) -> list[Any]:
    """A text or gram set as JSON data, exactly (for a stored session state)."""
    if isinstance(value, str):
        return ["t", value]
    return ["s", ["".join(gram) for gram in value]]


_ITEM_CODES = {1: "B", 2: "H", 4: "I"}  # forms "a": code points as unsigned integers of 1-4 bytes


def unpack(row: list[Any]) -> Any:
    """What `pack` stored, or the code-point form ("a") of older states; ValueError for a
    form it does not know."""
    kind = row[0]
    if kind == "t":
        return str(row[1])
    if kind == "s":
        return frozenset(tuple(str(g)) for g in row[1])
    if kind != "a" or row[1] not in _ITEM_CODES:
        raise ValueError(f"unknown gram form {kind!r}")
    points = array(_ITEM_CODES[row[1]])
    if points.itemsize != row[1]:  # (no such platform is known)
        raise ValueError("gram form 'a' needs 4-byte unsigned integers")
    points.frombytes(a2b_base64(row[2]))
    if len(points) % 3:
        raise ValueError("gram form 'a' holds a partial gram")
    chars = list(map(chr, points))  # (ValueError beyond U+10FFFF)
    return frozenset(zip(chars[0::3], chars[1::3], chars[2::3], strict=True))
