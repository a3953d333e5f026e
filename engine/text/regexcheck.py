"""User regular expressions, bounded before they are compiled and while they are matched.

The `regex` package has no limit on the size of a compiled pattern, and its
`timeout=` covers matching, not compiling: `(?:(?:(?:a{1000}){1000}){1000})`
(31 characters) takes all memory. So every user pattern is first analysed
statically (nothing is compiled to find out):

- at most `MAX_PATTERN_CHARS` characters;
- an estimated compiled size of at most `COMPILE_BUDGET` units: each atom is 1,
  a counted repeat `{m,n}` multiplies its body by n (by m, at least 1, when
  unbounded), groups and alternatives add up. Python's own parser reads the
  common syntax; `regex`-only syntax falls back to a conservative scan.

`redos_problem` finds patterns prone to catastrophic backtracking (a lint
warning): a repeat inside an unbounded repeat (`(a+)+`), or alternatives
that can start with the same character under an unbounded repeat (`(\\w|\\d)+`).

`search` matches under a per-pattern timeout and a shared `Deadline`, so
many patterns cannot add up to seconds per call.
"""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any

import regex

try:  # Python 3.11+: the parser moved and `sre_parse` warns on import
    from re import _constants as _c  # type: ignore[attr-defined]
    from re import _parser as _sre  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _sre  # type: ignore[no-redef]

MAX_PATTERN_CHARS = 500
COMPILE_BUDGET = 100_000
MATCH_TIMEOUT_S = 0.05  # one search
CALL_BUDGET_S = 0.1  # all user patterns of one check together
_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", _c.MAX_REPEAT)}
_UNBOUNDED = _c.MAXREPEAT


class PatternError(ValueError):
    """A user pattern refused before compiling (too long or too complex)."""


def complexity_problem(pattern: str) -> str | None:
    """Why `pattern` must not be compiled, or None."""
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"pattern is {len(pattern)} characters long (at most {MAX_PATTERN_CHARS})"
    try:
        cost = _cost(_sre.parse(pattern))
    except Exception:  # noqa: BLE001 - regex-only syntax (or an error regex will name)
        cost = _scan_cost(pattern)
    if cost > COMPILE_BUDGET:
        return (
            f"pattern too complex: nested repeat counts expand to about {cost:,} units "
            f"(at most {COMPILE_BUDGET:,})"
        )
    return None


def safe_compile(pattern: str, flags: int = 0) -> Any:
    """`regex.compile` after `complexity_problem` (raises PatternError or regex.error)."""
    problem = complexity_problem(pattern)
    if problem:
        raise PatternError(problem)
    return regex.compile(pattern, flags)


@lru_cache(maxsize=256)
def compiled_or_none(pattern: str, flags: int = 0) -> Any:
    """`safe_compile`, or None when the pattern is refused or does not compile (lint
    reports it; the engine skips it)."""
    try:
        return safe_compile(pattern, flags)
    except (regex.error, ValueError, OverflowError):
        return None


def _cost(items: Any) -> int:
    total = 0
    for op, av in items:
        if op in _REPEATS:
            low, high, body = av
            times = high if high != _UNBOUNDED else max(low, 1)
            total += max(times, 1) * _cost(body)
        elif op == _c.SUBPATTERN:
            total += _cost(av[-1])
        elif op == _c.BRANCH:
            total += sum(_cost(b) for b in av[1])
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            total += _cost(av[1])
        elif op == getattr(_c, "ATOMIC_GROUP", None):
            total += _cost(av)
        elif op == _c.GROUPREF_EXISTS:
            total += _cost(av[1]) + (_cost(av[2]) if av[2] is not None else 0)
        else:
            total += 1
        if total > COMPILE_BUDGET:
            return total
    return total


def _scan_cost(pattern: str) -> int:
    """A conservative cost from the text alone: every `{m}`/`{m,n}` multiplies the atom or
    group before it; escapes and classes count as one atom."""
    stack: list[int] = [0]
    last = 0
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            if (
                i < n + 1
                and pattern[i - 1 : i] in ("p", "P", "N", "x", "u", "U")
                and pattern[i : i + 1] == "{"
            ):
                i = pattern.find("}", i) + 1 or n
            last = 1
            stack[-1] += 1
            continue
        if c == "[":
            end = i + 1
            while end < n and pattern[end] != "]" or end == i + 1:
                end += 2 if pattern[end : end + 1] == "\\" else 1
            i, last = end + 1, 1
            stack[-1] += 1
            continue
        if c == "(":
            stack.append(0)
        elif c == ")" and len(stack) > 1:
            last = stack.pop()
            stack[-1] += last
        elif c == "{":
            end = pattern.find("}", i)
            counts = pattern[i + 1 : end].split(",") if end > i else []
            if end > i and counts and all(p.strip().isdigit() or not p.strip() for p in counts):
                high = max((int(p) for p in counts if p.strip()), default=1)
                stack[-1] += last * (max(high, 1) - 1)
                last *= max(high, 1)
                i = end + 1
                if stack[-1] > COMPILE_BUDGET:
                    return stack[-1]
                continue
            stack[-1] += 1
            last = 1
        elif c not in "*+?|":
            stack[-1] += 1
            last = 1
        i += 1
    return sum(stack)


# -- ReDoS ------------------------------------------------------------------------------
_ALPHABET = [chr(c) for c in range(0x20, 0x250)] + ["\t", "\n", "\u00a0", "\u4e00", "\u0660"]


def redos_problem(pattern: str, ignore_case: bool = False) -> str | None:
    """Why `pattern` may backtrack catastrophically, or None (unknown syntax: None)."""
    try:
        parsed = _sre.parse(pattern)
    except Exception:  # noqa: BLE001 - regex-only syntax: not analysed
        return None
    found = _redos(parsed, False, ignore_case)
    if found:
        return found
    # Python's parser merges `\w|\d` into one class and factors common prefixes, so
    # alternatives are read from the text: each one parsed on its own.
    for alternatives in _repeated_groups(pattern):
        try:
            firsts = [_first(list(_sre.parse(alt)), ignore_case) for alt in alternatives]
        except Exception:  # noqa: BLE001
            continue
        if _overlap(firsts):
            return (
                "alternatives that can match the same text under a repeat, "
                "like (a|a)* or (\\w|\\d)+"
            )
    return None


def _repeated_groups(pattern: str) -> list[list[str]]:
    """The top-level alternatives of each group followed by `*`, `+` or `{m,}`."""
    found: list[list[str]] = []
    opens: list[tuple[int, list[int]]] = []  # (index after the prefix, `|` positions)
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i += 2 if pattern[i + 1 : i + 2] == "]" else 1
            while i < n and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
        elif c == "(":
            start = i + 1
            if pattern.startswith("?", start):
                if (
                    pattern[start + 1 : start + 2] in ("=", "!")
                    or pattern.startswith("<=", start + 1)
                    or pattern.startswith("<!", start + 1)
                ):
                    start = -1  # a lookaround: not a repeated alternation
                else:
                    close = (
                        pattern.find(">", start)
                        if pattern[start + 1 : start + 2] in ("P", "<")
                        else -1
                    )
                    colon = pattern.find(":", start)
                    start = close + 1 if close > 0 else colon + 1 if colon > 0 else -1
            opens.append((start, []))
        elif c == "|" and opens:
            opens[-1][1].append(i)
        elif c == ")" and opens:
            start, bars = opens.pop()
            after = pattern[i + 1 : i + 2]
            unbounded = after in ("*", "+") or (
                after == "{" and regex.match(r"\{\d*,\}", pattern[i + 1 :])
            )
            if start >= 0 and bars and unbounded:
                cuts = [start - 1, *bars, i]
                found.append([pattern[a + 1 : b] for a, b in zip(cuts, cuts[1:], strict=False)])
        i += 1
    return found


def _redos(items: Any, under_star: bool, fold: bool) -> str | None:
    for op, av in items:
        if op in _REPEATS:
            low, high, body = av
            variable = high == _UNBOUNDED or high > low
            if under_star and variable:
                return "nested quantifiers (a repeat inside an unbounded repeat, like (a+)+)"
            if high == _UNBOUNDED and op != getattr(_c, "POSSESSIVE_REPEAT", None):
                branch = _branch_of(body)
                if branch is not None and _overlap([_first(list(b), fold) for b in branch]):
                    return (
                        "alternatives that can match the same text under a repeat, "
                        "like (a|ab)* or (\\w|\\d)+"
                    )
                found = _redos(body, True, fold)
            else:
                found = _redos(body, under_star, fold)
        elif op == _c.SUBPATTERN:
            found = _redos(av[-1], under_star, fold)
        elif op == _c.BRANCH:
            found = next((p for p in (_redos(b, under_star, fold) for b in av[1]) if p), None)
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            found = _redos(av[1], under_star, fold)
        else:
            found = None
        if found:
            return found
    return None


def _branch_of(body: Any) -> Any:
    items = list(body)
    while len(items) == 1 and items[0][0] == _c.SUBPATTERN:
        items = list(items[0][1][-1])
    if len(items) == 1 and items[0][0] == _c.BRANCH:
        return items[0][1][1]
    if len(items) == 1 and items[0][0] == _c.IN:  # [ab] is not ambiguous
        return None
    return None


def _overlap(firsts: list[set[str] | None]) -> bool:
    """Can two alternatives start alike (a shared first character, or both empty)?"""
    for i, a in enumerate(firsts):
        for b in firsts[i + 1 :]:
            if (a is None and b is None) or (a and b and a & b):
                return True
    return False


def _first(items: list[Any], fold: bool) -> set[str] | None:
    """Characters (of a sample alphabet) the sequence can start with; None when it can be empty."""
    found: set[str] = set()
    for op, av in items:
        if op == _c.AT:
            continue
        if op in _REPEATS:
            inner = _first(list(av[2]), fold)
            found |= inner or set()
            if av[0] > 0 and inner is not None:
                return found
            continue
        if op == _c.SUBPATTERN:
            inner = _first(list(av[-1]), fold)
            if inner is not None:
                return found | inner
            continue
        if op == _c.BRANCH:
            parts = [_first(list(b), fold) for b in av[1]]
            found |= set().union(*(p for p in parts if p))
            if all(p is not None for p in parts):
                return found
            continue
        return found | {ch for ch in _ALPHABET if _accepts(op, av, ch, fold)}
    return found or None


def _accepts(op: Any, av: Any, ch: str, fold: bool) -> bool:
    if op == _c.ANY:
        return ch != "\n"
    if op == _c.LITERAL:
        return ch == chr(av) or (fold and ch.lower() == chr(av).lower())
    if op == _c.NOT_LITERAL:
        return ch != chr(av)
    if op == _c.IN:
        negate = bool(av) and av[0][0] == _c.NEGATE
        hit = any(_in_item(o, a, ch, fold) for o, a in (av[1:] if negate else av))
        return hit != negate
    if op == _c.CATEGORY:
        return _category(av, ch)
    return True  # anything else: assume it may start with any character


def _in_item(op: Any, av: Any, ch: str, fold: bool) -> bool:
    if op == _c.LITERAL:
        return ch == chr(av) or (fold and ch.lower() == chr(av).lower())
    if op == _c.RANGE:
        return av[0] <= ord(ch) <= av[1] or (fold and av[0] <= ord(ch.lower()) <= av[1])
    if op == _c.CATEGORY:
        return _category(av, ch)
    return True


def _category(name: Any, ch: str) -> bool:
    text = str(name)
    negate = "NOT_" in text
    if "DIGIT" in text:
        hit = ch.isdigit()
    elif "SPACE" in text:
        hit = ch.isspace()
    elif "WORD" in text:
        hit = ch.isalnum() or ch == "_"
    else:
        hit = ch == "\n"
    return hit != negate


# -- matching ---------------------------------------------------------------------------
class Deadline:
    """The time left for user patterns in one check (`CALL_BUDGET_S` by default)."""

    __slots__ = ("end",)

    def __init__(self, budget_s: float = CALL_BUDGET_S) -> None:
        self.end = time.monotonic() + budget_s

    def left(self) -> float:
        return self.end - time.monotonic()


def matches(compiled: Any, text: str, deadline: Deadline | None = None) -> bool | None:
    """Whether `compiled` is found in `text`; None when time ran out."""
    timeout = MATCH_TIMEOUT_S if deadline is None else min(MATCH_TIMEOUT_S, deadline.left())
    if timeout <= 0:
        return None
    try:
        return compiled.search(text, timeout=timeout) is not None
    except TimeoutError:
        return None


def search(compiled: Any, text: str, deadline: Deadline | None = None) -> Any:
    """`compiled.search(text)` bounded by `MATCH_TIMEOUT_S` and the deadline; None on time-out."""
    timeout = MATCH_TIMEOUT_S
    if deadline is not None:
        left = deadline.left()
        if left <= 0:
            return None
        timeout = min(timeout, left)
    try:
        return compiled.search(text, timeout=timeout)
    except TimeoutError:
        return None
