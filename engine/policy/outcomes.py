"""What a call's outcome tells a loop detector: failed, still waiting, or nothing new.

Compiled once per policy from the `outcomes` block of the rules (what each setting means:
docs/detection.md). A failure's *shape* is its text with every run of digits blinded, so
the same error with another line number is the same failure; any other outcome keeps its
exact digest, unless it is near-equal to the result of the same call just before (the
Jaccard similarity of their line sets, digits blinded, at least `near_similarity`).

Markers are keywords, matched case-insensitively in one pass of an Aho-Corasick automaton
over the first and last `SCAN_CHARS` characters of the text, so the cost of a call does not
grow with the number of markers or the size of its result. The poll name pattern is a user
regex, matched with a timeout once per tool name and remembered.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import ahocorasick_rs
import regex

from loopguard.rules import default
from loopguard.state.fingerprint import digest_text
from loopguard.state.history import FAILED, STATUS, UNREAD
from loopguard.text.regexcheck import MAX_PATTERN_CHARS, compiled_or_none, search

SCAN_CHARS = 512  # characters searched at each end of a result text
NEAR_MAX_CHARS = 16384  # longer texts are never compared line by line (nor kept for it)
_CATCH_UP = 30  # history entries searched for a call's unread first occurrence
_MAX_NAMES = 1024  # tool names whose poll verdict is remembered per policy
_MAX_TEXTS = 512  # result texts whose verdict is remembered per policy (by outcome digest)
_DIGITS = re.compile(r"\d+")
_LEAD = " \t\r\n\"'`{[(<>*#-:"  # stripped before looking for a failure prefix


class Markers:
    """Case-insensitive whole-word keyword search over the ends of a text (one automaton).

    Each keyword belongs to a category (here: failure or status); one pass finds the
    categories present. A keyword that starts (ends) with a letter or digit must not be
    preceded (followed) by one: `eta` is not found in `metadata`.
    """

    def __init__(self, *categories: Any) -> None:
        kinds: dict[str, int] = {}
        for kind, words in enumerate(categories):
            for word in words or ():
                if isinstance(word, str) and word.strip():
                    kinds.setdefault(word.lower(), kind)
        self.words = sorted(kinds)
        self.kinds = [kinds[w] for w in self.words]
        self.automaton = ahocorasick_rs.AhoCorasick(self.words) if self.words else None

    def found(self, text: str) -> int:
        """A bit set of the categories with a keyword in the text (bit k: category k)."""
        if self.automaton is None:
            return 0
        if len(text) > 2 * SCAN_CHARS:
            text = text[:SCAN_CHARS] + "\n" + text[-SCAN_CHARS:]
        low = text.lower()
        try:
            matches = self.automaton.find_matches_as_indexes(low, overlapping=True)
        except UnicodeEncodeError:  # a lone surrogate (half an emoji): searched as "?"
            low = low.encode("utf-8", "replace").decode("utf-8")
            matches = self.automaton.find_matches_as_indexes(low, overlapping=True)
        if not matches:  # the usual case
            return 0
        words, kinds, end, seen = self.words, self.kinds, len(low), 0
        for index, start, stop in matches:
            word = words[index]
            if word[0].isalnum() and start and low[start - 1].isalnum():
                continue
            if word[-1].isalnum() and stop < end and low[stop].isalnum():
                continue
            seen |= 1 << kinds[index]
        return seen


def blind(text: str) -> str:
    """The text with every run of digits replaced by `#`."""
    return _DIGITS.sub("#", text)


def line_set(text: str) -> frozenset[str]:
    """The distinct lines of a text, digits blinded and ends stripped."""
    return frozenset(line.strip() for line in blind(text).split("\n"))


class OutcomeReader:
    """Reads failure, shape, status and near-equality off outcome texts."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        block = config.get("outcomes") or {}
        self.near = float(block.get("near_similarity", default("outcomes.near_similarity")) or 0)
        self.markers = Markers(block.get("failure_markers"), block.get("status_markers"))
        self.prefixes = tuple(
            sorted(
                {p.lower() for p in block.get("failure_prefixes") or () if isinstance(p, str) and p}
            )
        )
        pattern = block.get("poll_name_pattern")
        named = isinstance(pattern, str) and pattern  # (an empty pattern matches every name)
        self.poll_name = compiled_or_none(pattern, regex.IGNORECASE) if named else None
        self._polling_names: dict[str, bool] = {}
        self._texts: dict[bytes, tuple[int, bytes | None]] = {}  # outcome digest -> text verdict

    def read(self, state: Any, entry: Any, text: str | None, error: bool) -> None:
        """Set a completed entry's flags and shape (digit-blind failures, near-equal repeats).

        `entry.outcome` is the outcome digest of `text` (see `Session.after_call`).
        """
        seen = 0
        if error:
            entry.flags = FAILED
            if text is not None:
                entry.shape = b"fail:" + digest_text(blind(text))
        elif (
            text is not None
            and (seen := state.digests.count(entry.digest)) < 2
            and not self.polling_name(entry.tool)
        ):
            # The first time lately: only a call that comes round again is compared, so its
            # result is read then (see _catch_up), and most calls never pay for reading.
            entry.flags = UNREAD
        else:
            flags, shape = (0, None) if text is None else self._text_verdict(entry.outcome, text)
            if flags:
                entry.flags, entry.shape = flags, shape
            elif self.polling_name(entry.tool):
                entry.flags = STATUS
            elif (
                self.near
                and text is not None
                and state.last_result is not None
                and state.last_result[0].digest == entry.digest
            ):  # only a repeat can be near-equal
                self._near_repeat(state, entry, text)
            if text is not None and seen == 2:  # (later repeats found the first one read)
                self._catch_up(state, entry)
        state.last_result = (
            entry,
            text if text is not None and len(text) <= NEAR_MAX_CHARS else None,
        )

    def _text_verdict(self, outcome: bytes, text: str) -> tuple[int, bytes | None]:
        """(FAILED, digit-blind shape), (STATUS, None) or (0, None): what a result text says.

        Remembered per outcome digest (up to `_MAX_TEXTS` per policy): results repeat —
        a poll, a failing test run again — and a repeat then costs one dict look-up.
        """
        known = self._texts.get(outcome)
        if known is None:
            found = self.markers.found(text)
            if found & 1 or self._starts_failed(text):
                known = (FAILED, b"fail:" + digest_text(blind(text)))
            else:
                known = (STATUS if found & 2 else 0, None)
            if len(self._texts) >= _MAX_TEXTS:
                self._texts.clear()
            self._texts[outcome] = known
        return known

    def _catch_up(self, state: Any, entry: Any) -> None:
        """Give the call's unread first occurrence its verdict when their results are equal.

        A first occurrence whose result differs (another line number in the same error)
        stays unread and compares by its exact outcome: that chain is seen one call later.
        """
        history = state.history
        for i in range(len(history) - 2, max(-1, len(history) - 2 - _CATCH_UP), -1):
            earlier = history[i]
            if earlier.digest != entry.digest:
                continue
            if earlier.flags & UNREAD and earlier.outcome == entry.outcome:
                earlier.flags, earlier.shape = entry.flags, entry.shape
            return

    def _near_repeat(self, state: Any, entry: Any, text: str) -> None:
        """A back-to-back repeat whose result is near-equal to the one before: nothing new."""
        prev, prev_text = state.last_result
        history = state.history
        if (
            prev_text is None
            or prev.round == entry.round
            or len(history) < 2
            or history[-1] is not entry
            or history[-2] is not prev
        ):
            return
        if prev.flags & UNREAD:  # its text is still at hand: read it now
            prev.flags, prev.shape = self._text_verdict(prev.outcome, prev_text)
        if prev.flags:
            return
        same = prev.same_as
        if same is not None and same != entry.same_as and near_equal(prev_text, text, self.near):
            entry.shape = same

    def _starts_failed(self, text: str) -> bool:
        """The text starts with a failure prefix as a word (`Error: …`, `{"error": "…"}`)."""
        head = text[:64].lstrip(_LEAD).lower()
        if not head.startswith(self.prefixes):
            return False
        for prefix in self.prefixes:
            if head.startswith(prefix):
                rest = head[len(prefix) :]
                if rest[:1].isalnum() or rest[:1] == "_":
                    continue  # part of a longer word: `errors`, `error_count`
                if rest[:1] == '"':  # a JSON key: a failure unless its value is empty
                    value = rest[1:].lstrip(" :")
                    return not value.startswith(("null", "false", '""', "[]", "{}", "0"))
                return True
        return False

    def polling_name(self, tool: str) -> bool:
        """Whether the tool's name says it polls (remembered per name)."""
        known = self._polling_names.get(tool)
        if known is None:
            known = False
            if self.poll_name is not None:
                try:
                    known = search(self.poll_name, tool[:MAX_PATTERN_CHARS]) is not None
                except TimeoutError:
                    known = False  # a pathological name pattern: the name says nothing
            if len(self._polling_names) >= _MAX_NAMES:
                self._polling_names.clear()
            self._polling_names[tool] = known
        return known


def near_equal(a: str, b: str, similarity: float) -> bool:
    """Whether two result texts are the same give or take digits and a few lines."""
    if a == b:
        return True
    if len(a) > NEAR_MAX_CHARS or len(b) > NEAR_MAX_CHARS:
        return False
    left, right = line_set(a), line_set(b)
    union = len(left | right)
    return union > 0 and len(left & right) / union >= similarity
