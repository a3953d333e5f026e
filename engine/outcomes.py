"""What a call's outcome tells a loop detector: failed, still waiting, or nothing new.

Compiled once per policy from the `outcomes` block of the rules:

- **failure**: the host reported an error (`after_call(error=...)`), or the
  result text matches one of `failure_patterns` — errors of the call itself
  (`Error: ...` from a tool API, `command not found`, a time-out, a shell
  syntax error), not a test run that reports failures;
- **shape**: what two outcomes must share to count as "the same". A failure's
  shape is its text with every run of digits replaced, so the same error with
  another line number, time or counter is the same failure; any other outcome
  keeps its exact digest;
- **status**: the result reads like a job still in progress (`status_patterns`:
  running, pending, 40 % …), or the tool's name says it polls
  (`poll_name_pattern`): such calls are polls, which may repeat for a while;
- **near-equal**: two result texts whose sets of lines (digits blinded) have a
  Jaccard similarity of at least the detector's `similarity` — the same
  output, give or take a counter or a few shifted lines.

User patterns are compiled with `regex` and matched with a timeout over the
first and last `SCAN_CHARS` characters, so a pathological pattern or a huge
result never stalls a call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import regex

from .fingerprint import digest_text

SCAN_CHARS = 2048  # characters searched at each end of a result text
NEAR_MAX_CHARS = 65536  # longer texts are never compared line by line
MAX_PATTERN_CHARS = 500
_MATCH_TIMEOUT = 0.05
_DIGITS = re.compile(r"\d+")


def _compile(patterns: Any) -> tuple[Any, ...]:
    compiled = []
    for pattern in patterns or ():
        if not isinstance(pattern, str) or len(pattern) > MAX_PATTERN_CHARS:
            continue
        try:
            compiled.append(regex.compile(pattern, regex.IGNORECASE | regex.MULTILINE))
        except (regex.error, ValueError, OverflowError):
            continue  # lint reports it; the engine skips it
    return tuple(compiled)


def _search(patterns: tuple[Any, ...], text: str) -> bool:
    if len(text) > 2 * SCAN_CHARS:
        text = text[:SCAN_CHARS] + "\n" + text[-SCAN_CHARS:]
    for pattern in patterns:
        try:
            if pattern.search(text, timeout=_MATCH_TIMEOUT):
                return True
        except TimeoutError:
            continue
    return False


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
        self.failures = _compile(block.get("failure_patterns"))
        self.statuses = _compile(block.get("status_patterns"))
        names = _compile([block["poll_name_pattern"]] if block.get("poll_name_pattern") else ())
        self.poll_name = names[0] if names else None

    def read(self, call: Any) -> tuple[bool, bool, bytes]:
        """(failed, status, shape) of a completed call, computed once per call."""
        meaning = call.meaning
        if meaning is None:
            failed = self.failed(call.text, call.error is not None)
            status = not failed and self.status(call.tool, call.text)
            meaning = call.meaning = (failed, status, self.shape(call.outcome, call.text, failed))
        return meaning

    def failed(self, text: str | None, error: bool) -> bool:
        """The call itself failed: an error reported by the host, or a failure pattern."""
        return error or (text is not None and _search(self.failures, text))

    def shape(self, outcome: bytes, text: str | None, failed: bool) -> bytes:
        """What must be equal for two outcomes to be the same (digit-blind for failures)."""
        if failed and text is not None:
            return b"fail:" + digest_text(blind(text))
        return outcome

    def status(self, tool: str, text: str | None) -> bool:
        """The call looks like a poll: its name says so, or its result reports progress."""
        if self.poll_name is not None:
            try:
                if self.poll_name.search(tool, timeout=_MATCH_TIMEOUT):
                    return True
            except TimeoutError:
                pass
        return text is not None and _search(self.statuses, text)


def near_equal(a: str, b: str, similarity: float) -> bool:
    """Whether two result texts are the same give or take digits and a few lines."""
    if a == b:
        return True
    if len(a) > NEAR_MAX_CHARS or len(b) > NEAR_MAX_CHARS:
        return False
    left, right = line_set(a), line_set(b)
    union = len(left | right)
    return union > 0 and len(left & right) / union >= similarity
