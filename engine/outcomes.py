"""What a call's outcome tells a loop detector: failed, still waiting, or nothing new.

Compiled once per policy from the `outcomes` block of the rules:

- **failure**: the host reported an error (`after_call(error=...)`), or the
  result text starts with one of `failure_prefixes` (`Error: ...` from a tool
  API) or contains one of `failure_markers` — errors of the call itself
  (`command not found`, a time-out, a shell syntax error), not a test run that
  reports failures;
- **shape**: what two outcomes must share to count as "the same". A failure's
  shape is its text with every run of digits replaced, so the same error with
  another line number, time or counter is the same failure; any other outcome
  keeps its exact digest;
- **status**: the result reads like a job still in progress (`status_markers`:
  running, pending, 40 % …), or the tool's name says it polls
  (`poll_name_pattern`): such calls are polls, which may repeat for a while;
- **near-equal**: two result texts whose sets of lines (digits blinded) have a
  Jaccard similarity of at least the detector's `similarity` — the same
  output, give or take a counter or a few shifted lines.

Markers are keywords, matched case-insensitively in one pass of an
Aho-Corasick automaton (ahocorasick-rs) over the first and last `SCAN_CHARS`
characters of the text, so the cost of a call does not grow with the number
of markers or the size of its result. The poll name pattern is a user regex
(`regex`, with a timeout), matched once per tool name and remembered.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import ahocorasick_rs
import regex

from .fingerprint import digest_text

SCAN_CHARS = 512  # characters searched at each end of a result text
NEAR_MAX_CHARS = 16384  # longer texts are never compared line by line (nor kept for it)
MAX_PATTERN_CHARS = 500
_MATCH_TIMEOUT = 0.05
_MAX_NAMES = 1024  # tool names whose poll verdict is remembered per policy
_DIGITS = re.compile(r"\d+")
_LEAD = " \t\r\n\"'`{[(<>*#-:"  # stripped before looking for a failure prefix


class Markers:
    """Case-insensitive whole-word keyword search over the ends of a text (one automaton).

    A keyword that starts (ends) with a letter or digit must not be preceded
    (followed) by one: `eta` is not found in `metadata`.
    """

    def __init__(self, words: Any) -> None:
        found = sorted({w.lower() for w in words or () if isinstance(w, str) and w.strip()})
        self.words = found
        self.automaton = ahocorasick_rs.AhoCorasick(found) if found else None

    def search(self, text: str) -> bool:
        if self.automaton is None:
            return False
        if len(text) > 2 * SCAN_CHARS:
            text = text[:SCAN_CHARS] + "\n" + text[-SCAN_CHARS:]
        low = text.lower()
        words, end = self.words, len(low)
        for index, start, stop in self.automaton.find_matches_as_indexes(low, overlapping=True):
            word = words[index]
            if word[0].isalnum() and start and low[start - 1].isalnum():
                continue
            if word[-1].isalnum() and stop < end and low[stop].isalnum():
                continue
            return True
        return False


def _name_pattern(pattern: Any) -> Any:
    if not isinstance(pattern, str) or not pattern or len(pattern) > MAX_PATTERN_CHARS:
        return None
    try:
        return regex.compile(pattern, regex.IGNORECASE)
    except (regex.error, ValueError, OverflowError):
        return None  # lint reports it; the engine skips it


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
        self.failures = Markers(block.get("failure_markers"))
        self.prefixes = tuple(sorted({p.lower() for p in block.get("failure_prefixes") or ()
                                      if isinstance(p, str) and p}))
        self.statuses = Markers(block.get("status_markers"))
        self.poll_name = _name_pattern(block.get("poll_name_pattern"))
        self._polling_names: dict[str, bool] = {}

    def read(self, call: Any) -> tuple[bool, bool, bytes]:
        """(failed, status, shape) of a completed call, computed once per call."""
        meaning = call.meaning
        if meaning is None:
            failed = self.failed(call.text, call.error is not None)
            status = not failed and self.status(call.tool, call.text)
            meaning = call.meaning = (failed, status, self.shape(call.outcome, call.text, failed))
        return meaning

    def failed(self, text: str | None, error: bool) -> bool:
        """The call itself failed: an error reported by the host, a failure prefix or marker."""
        if error:
            return True
        if text is None:
            return False
        if self.prefixes and text[:64].lstrip(_LEAD).lower().startswith(self.prefixes):
            return True
        return self.failures.search(text)

    def shape(self, outcome: bytes, text: str | None, failed: bool) -> bytes:
        """What must be equal for two outcomes to be the same (digit-blind for failures)."""
        if failed and text is not None:
            return b"fail:" + digest_text(blind(text))
        return outcome

    def status(self, tool: str, text: str | None) -> bool:
        """The call looks like a poll: its name says so, or its result reports progress."""
        return self.polling_name(tool) or (text is not None and self.statuses.search(text))

    def polling_name(self, tool: str) -> bool:
        """Whether the tool's name says it polls (remembered per name)."""
        known = self._polling_names.get(tool)
        if known is None:
            known = False
            if self.poll_name is not None:
                try:
                    known = self.poll_name.search(tool[:MAX_PATTERN_CHARS], timeout=_MATCH_TIMEOUT) is not None
                except TimeoutError:
                    pass
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
