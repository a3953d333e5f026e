"""Keyword sets compiled into one Aho-Corasick automaton, and condition trees over them.

Each distinct normalised keyword maps to a bit mask of the sets it belongs to, so one pass over
a text yields the mask of every set it contains, whatever the number of keywords; `text_equals`
is a dict lookup of the whole normalised text (`turn.normalize` applies to keywords and texts
alike). Conditions (docs/turns.md) compile to closures over the masks of a `Probe`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ahocorasick_rs

from loopguard.errors import rules_error
from loopguard.rules import default
from loopguard.text.normalize import Normalizer

LEAVES = ("text_contains", "text_equals", "context_contains")
_OPERATORS = f"all, any, not, {', '.join(LEAVES)}"
Condition = Callable[["Probe", "Probe"], bool]  # cond(text_probe, context_probe) -> bool


@dataclass(frozen=True, slots=True)
class KeywordHit:
    """One keyword occurrence; `start`/`end` are character offsets in the normalised text."""

    keyword: str
    sets: tuple[str, ...]
    start: int
    end: int


class KeywordIndex:
    """All keyword sets of a config in one automaton; immutable and thread-safe once built."""

    def __init__(
        self,
        keyword_sets: Mapping[str, Sequence[str]],
        normalize: Iterable[str] = ("strip", "lower"),
    ) -> None:
        self.normalize = Normalizer(normalize)
        self.names: tuple[str, ...] = tuple(keyword_sets)
        self._bits = {name: 1 << i for i, name in enumerate(self.names)}
        masks: dict[str, int] = {}
        self._exact: dict[str, int] = {}
        for name, keywords in keyword_sets.items():
            where = f"keyword_sets.{name}"
            if not isinstance(keywords, (list, tuple)):
                raise rules_error(f"keyword set {name!r} must be a list of strings", where)
            for i, keyword in enumerate(keywords):
                if not isinstance(keyword, str):
                    hint = "quote it in the YAML file"
                    raise rules_error(f"keyword {keyword!r} is not a string", f"{where}[{i}]", hint)
                norm = self.normalize(keyword)
                if norm:
                    masks[norm] = masks.get(norm, 0) | self._bits[name]
                    key = self.normalize.equality_key(norm)
                    self._exact[key] = self._exact.get(key, 0) | self._bits[name]
        self._patterns = list(masks)
        self._masks = list(masks.values())
        self._automaton = ahocorasick_rs.AhoCorasick(self._patterns) if self._patterns else None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> KeywordIndex:
        """Compile `keyword_sets` with the `turn.normalize` steps of a rules dict."""
        turn = config.get("turn") or {}
        steps = turn.get("normalize", default("turn.normalize"))
        return cls(config.get("keyword_sets") or {}, steps if steps is not None else [])

    def __len__(self) -> int:
        return len(self._patterns)

    def bits(self, names: str | Sequence[str], path: str) -> int:
        """The mask of one set name or a list of names; unknown names are a RulesError."""
        listed = [names] if isinstance(names, str) else names
        if not isinstance(listed, (list, tuple)) or not listed:
            raise rules_error("expected a keyword set name or a list of names", path)
        mask = 0
        for name in listed:
            if name not in self._bits:
                hint = f"define it under keyword_sets (known: {', '.join(self.names)})"
                raise rules_error(f"unknown keyword set {name!r}", path, hint)
            mask |= self._bits[name]
        return mask

    def contains_mask(self, normalised: str) -> int:
        """Mask of the sets with a keyword anywhere in an already-normalised text."""
        if self._automaton is None or not normalised:
            return 0
        mask, masks = 0, self._masks
        for index, _, _ in self._automaton.find_matches_as_indexes(normalised, overlapping=True):
            mask |= masks[index]
        return mask

    def equals_mask(self, normalised: str) -> int:
        """Mask of the sets having a keyword equal to the whole normalised text."""
        return self._exact.get(self.normalize.equality_key(normalised), 0)

    def find(self, text: str) -> list[KeywordHit]:
        """Every occurrence (overlapping) of every keyword in the normalised `text`."""
        norm = self.normalize(text)
        if self._automaton is None or not norm:
            return []
        hits = []
        for index, start, end in self._automaton.find_matches_as_indexes(norm, overlapping=True):
            mask = self._masks[index]
            sets = tuple(n for n in self.names if mask & self._bits[n])
            hits.append(KeywordHit(self._patterns[index], sets, start, end))
        return hits

    def probe(self, text: str) -> Probe:
        return Probe(self, text)

    def compile(self, node: Any, path: str = "when") -> Condition:
        """Compile a condition tree into a closure; bad shapes raise RulesError naming `path`."""
        if not isinstance(node, Mapping) or len(node) != 1:
            raise rules_error(f"a condition is a mapping with exactly one key ({_OPERATORS})", path)
        ((op, arg),) = node.items()
        where = f"{path}.{op}"
        if op in ("all", "any"):
            if not isinstance(arg, list) or not arg:
                raise rules_error(f"'{op}' takes a non-empty list of conditions", where)
            parts = tuple(self.compile(sub, f"{where}[{i}]") for i, sub in enumerate(arg))
            if op == "all":
                return lambda t, c: all(part(t, c) for part in parts)
            return lambda t, c: any(part(t, c) for part in parts)
        if op == "not":
            inner = self.compile(arg, where)
            return lambda t, c: not inner(t, c)
        if op not in LEAVES:
            raise rules_error(f"unknown condition {op!r}", path, f"use {_OPERATORS}")
        bit = self.bits(arg, where)
        if op == "text_contains":
            return lambda t, c: bool(t.contains & bit)
        if op == "text_equals":
            return lambda t, c: bool(t.equals & bit)
        return lambda t, c: bool(c.contains & bit)


class Probe:
    """One text, normalised once; its masks are computed on first use and cached."""

    __slots__ = ("_index", "normalised", "_contains", "_equals")

    def __init__(self, index: KeywordIndex, text: str) -> None:
        self._index = index
        self.normalised = index.normalize(text)
        self._contains: int | None = None
        self._equals: int | None = None

    @property
    def contains(self) -> int:
        if self._contains is None:
            self._contains = self._index.contains_mask(self.normalised)
        return self._contains

    @property
    def equals(self) -> int:
        if self._equals is None:
            self._equals = self._index.equals_mask(self.normalised)
        return self._equals
