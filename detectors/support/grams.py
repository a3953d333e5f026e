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
