"""Character 3-gram sets and Jaccard similarity for the fuzzy doom-loop detector.

A gram set is computed once per call and kept in the detector's window, so a
comparison never rebuilds either side. `similar()` first rejects pairs whose
sizes alone rule out the required similarity, then counts the intersection.
"""

from __future__ import annotations

from collections.abc import Set


def grams(text: str) -> frozenset[str]:
    """The set of character 3-grams; a text shorter than 3 is one gram, empty is empty."""
    if len(text) < 3:
        return frozenset((text,)) if text else frozenset()
    return frozenset([text[i:i + 3] for i in range(len(text) - 2)])


def jaccard(a: Set[str], b: Set[str]) -> float:
    """|A ∩ B| / |A ∪ B|; 0.0 when either side is empty."""
    if not a or not b:
        return 0.0
    inter = len(a & b) if len(a) <= len(b) else len(b & a)
    return inter / (len(a) + len(b) - inter)


def similar(a: Set[str], b: Set[str], threshold: float) -> bool:
    """True when jaccard(a, b) >= threshold, skipping the count when sizes rule it out."""
    if not a or not b:
        return False
    small, large = (len(a), len(b)) if len(a) <= len(b) else (len(b), len(a))
    if small < threshold * large:  # even a full overlap could not reach the threshold
        return False
    return jaccard(a, b) >= threshold
