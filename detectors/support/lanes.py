"""Where two long texts agree, position by position, for the fuzzy doom-loop detector's bounds.

A text is read as one Python integer, character i in lane i (8 bits a character for Latin-1
texts, 32 for the others, lowest lane first). XOR of two such integers, one shifted by an offset,
has a zero lane wherever the characters at that offset agree, so a handful of integer operations
over the whole text (in C, a machine word at a time) mark the gram positions two texts share at
an offset: what a vectorised library would do, without one.

`unmatched` counts the gram positions of each text not shown to occur in the other, trying the
offsets an edit is likely to leave (0, the length difference, and offsets found by probing long
unmatched stretches); `grams.judge` turns the counts into a lower bound on the Jaccard
similarity. They are upper bounds on the grams each text has that the other lacks: a gram can
occur elsewhere, never the other way round.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

PROBES = 4  # unmatched stretches probed per round for another offset
PROBE_RUN = 32  # an unmatched stretch at least this long may be a shifted copy
PROBE_CHARS = 16  # characters of a probe
PROBE_REACH = 256  # how far beyond the offsets tried so far a probe is looked for
WINDOW = 16  # characters compared to tell which side of a shift a position is on
STRETCHES = 16  # unmatched stretches looked at per round (the longest are probed)
SHOWN_TO_PROBE = 0.25  # probing starts once this share of A's positions is matched
NARROW, WIDE = 8, 32  # lane bits: a Latin-1 character, any character (UTF-32)
MOST_LANES = 16384  # the longest text compared (grams.SAMPLE_CHARS)

_ones: dict[int, int] = {}  # lane bits -> the lowest bit of each of MOST_LANES lanes set


class Texts(Protocol):
    """What `unmatched` reads of a text: the text, its bytes and its lanes (`grams.Sketch`)."""

    text: str | None

    def encoded(self, bits: int) -> bytes | None: ...

    def lanes(self, bits: int) -> int: ...


def unmatched(a: Texts, b: Texts, enough: Callable[[int, int], bool]) -> tuple[int, int]:
    """Gram positions of A and of B not shown to occur in the other text, at most; refined
    only until `enough(of_a, of_b)` says the bound they give is proved. Texts of 3+ characters."""
    bits = _width(a, b)
    x, y = a.lanes(bits), b.lanes(bits)
    text_a, text_b = a.text or "", b.text or ""
    size_a, size_b = len(text_a), len(text_b)
    if size_a == size_b:
        # A differing character has a differing bit, and is in at most 3 grams: two operations.
        differ = 3 * (x ^ y).bit_count()
        if differ <= PROBE_RUN or enough(differ, differ):
            return differ, differ
        offsets = [0]
    else:
        shifted = _one_shift(x, y, text_a, text_b, bits)
        if shifted is not None and enough(*shifted):
            return shifted
        offsets = [0, size_b - size_a]
    shown_a = shown_b = 0  # lanes of the gram positions shown to occur in the other text
    tried: set[int] = set()
    for _ in range(3):  # the first offsets, then twice those that probing finds
        for offset in offsets:
            tried.add(offset)
            found = _shared(x, y, offset, size_a, size_b, bits)
            shown_a |= found
            shown_b |= found << (bits * offset) if offset >= 0 else found >> (bits * -offset)
        missing = (size_a - 2 - shown_a.bit_count(), size_b - 2 - shown_b.bit_count())
        if missing[0] < PROBE_RUN or enough(*missing):
            break
        if missing[0] > (1 - SHOWN_TO_PROBE) * (size_a - 2):
            break  # another text more than an edited copy: no shift to look for
        offsets = _probe(text_a, text_b, shown_a, bits, tried)
        if not offsets:
            break
    return missing


def _one_shift(x: int, y: int, text_a: str, text_b: str, bits: int) -> tuple[int, int] | None:
    """The bound for B as A with one insertion or deletion (and substitutions): both texts
    compared unshifted before the cut where they switch from one alignment to the other, and
    shifted by the length difference after the inserted (or deleted) characters; None when no
    such cut shows."""
    delta = len(text_b) - len(text_a)
    low, high = max(0, -delta), min(len(text_a), len(text_b))  # the cut lies in between
    while high - low > 2 * WINDOW:
        middle = (low + high) // 2
        side = _side(text_a, text_b, middle, delta)
        if side is None:  # an edit in the window: look a little further on
            middle += WINDOW
            side = _side(text_a, text_b, middle, delta)
        if side is None:
            return None
        if side:
            high = middle
        else:
            low = middle
    cut = low
    while cut < high and text_a[cut] == text_b[cut]:
        cut += 1
    after_a, after_b = cut + max(-delta, 0), cut + max(delta, 0)  # past what only one text has
    head = (x ^ y) & ((1 << (bits * cut)) - 1)
    tail = (x >> (bits * after_a)) ^ (y >> (bits * after_b))
    differ = 3 * (head.bit_count() + tail.bit_count()) + 2  # (+ the grams across the cut)
    return differ + max(-delta, 0), differ + max(delta, 0)


def _side(text_a: str, text_b: str, at: int, delta: int) -> int | None:
    """Whether A's window at `at` is found in B unshifted (0) or shifted by `delta` (1)."""
    window = text_a[at : at + WINDOW]
    if text_b.startswith(window, at):
        return 0
    if text_b.startswith(window, at + delta):
        return 1
    return None


def _width(a: Texts, b: Texts) -> int:
    """The lane width both texts can be read in: narrow when both are Latin-1."""
    return NARROW if a.encoded(NARROW) is not None and b.encoded(NARROW) is not None else WIDE


def ones_of(count: int, bits: int) -> int:
    """The lowest bit of each of the first `count` lanes set."""
    full = _ones.get(bits)
    if full is None:
        lane = b"\x01" + bytes(bits // 8 - 1)
        full = _ones[bits] = int.from_bytes(lane * MOST_LANES, "little")
    return full >> (bits * (MOST_LANES - count))


def _shared(x: int, y: int, offset: int, size_a: int, size_b: int, bits: int) -> int:
    """Lanes i (lowest bits) of the grams with A[i:i+3] == B[i+offset:i+offset+3]."""
    start, stop = max(0, -offset), min(size_a, size_b - offset)  # where B[i+offset] exists
    if stop - start < 3:
        return 0
    diff = x ^ (y >> (bits * offset) if offset >= 0 else y << (bits * -offset))
    shift = bits // 2
    while shift:  # fold each lane onto its lowest bit: 1 where the characters differ
        diff |= diff >> shift
        shift //= 2
    lanes = ones_of(stop, bits) ^ ones_of(start, bits)
    same = lanes ^ (diff & lanes)
    return same & (same >> bits) & (same >> (2 * bits))


def _probe(text_a: str, text_b: str, shown: int, bits: int, tried: set[int]) -> list[int]:
    """Offsets at which the middle of one of A's longest unmatched stretches occurs in B, near
    the offsets tried so far (an edit that shifted the rest of the text), new ones only."""
    positions = len(text_a) - 2
    open_lanes = ones_of(positions, bits) ^ shown
    flags = open_lanes.to_bytes(bits // 8 * positions, "little")[:: bits // 8]
    stretches: list[tuple[int, int]] = []
    start = flags.find(b"\x01" * PROBE_RUN)
    while start >= 0 and len(stretches) < STRETCHES:
        end = flags.find(b"\x00", start)
        end = positions if end < 0 else end
        stretches.append((end - start, start))
        start = flags.find(b"\x01" * PROBE_RUN, end)
    low, high = min(tried), max(tried)
    found = set()
    for length, start in sorted(stretches, reverse=True)[:PROBES]:
        at = start + length // 2
        probe = text_a[at : at + PROBE_CHARS]
        where = text_b.find(
            probe, max(0, at + low - PROBE_REACH), at + high + PROBE_REACH + PROBE_CHARS
        )
        if where >= 0 and where - at not in tried:
            found.add(where - at)
    return sorted(found)
