"""Shared settings found by a mark in a detector's options schema, and what the engine builds
from them: the poll matcher and the unknown-tool classifier.

Some settings are concepts more than one detector (or the engine) uses, but users
write them as an option of the detector that introduced them: the poll tools
(`detectors.known_poll_no_progress.poll_tools`) and the unknown-tool error
patterns and known tools (`detectors.unknown_tool_repeat.patterns`, `known_tools`).
That detector marks the option in its options schema; the engine finds every
registered option carrying a mark and reads its effective value (else the
option's schema default), so it never names a detector. `PollMatcher` is the one
classification of polls every detector reads; `UnknownTools` classifies failed calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import regex

from loopguard.detection.plugins import load_registry
from loopguard.text.regexcheck import Deadline, compiled_or_none, search

POLL_TOOLS = "x-loopguard-poll-tools"  # a list of {tool, when_args} poll declarations
UNKNOWN_TOOL_PATTERNS = "x-loopguard-unknown-tool-patterns"  # regexes finding an unknown tool
KNOWN_TOOLS = "x-loopguard-known-tools"  # tools that exist, whatever a result says
SCAN_LIMIT = 4000  # characters of an error text searched for an unknown tool


def marked(mark: str) -> list[tuple[str, str, Any]]:
    """(detector id, option, schema default) of every registered option carrying `mark`."""
    found = []
    for entry in load_registry().entries:
        properties = entry.detector.options_schema.get("properties") or {}
        for option, prop in properties.items():
            if isinstance(prop, Mapping) and prop.get(mark) is True:
                found.append((entry.id, option, prop.get("default")))
    return found


def marked_values(config: Mapping[str, Any], mark: str) -> list[Any]:
    """The items of every list option carrying `mark`, as the effective rules set them."""
    values: list[Any] = []
    detectors = config.get("detectors")
    for ident, option, default in marked(mark):
        block = detectors.get(ident) if isinstance(detectors, Mapping) else None
        value = block.get(option) if isinstance(block, Mapping) else None
        value = default if value is None else value
        values.extend(value if isinstance(value, list) else ())
    return values


class PollMatcher:
    """`tool` alone, or `tool` with `when_args: {arg: [values]}`."""

    def __init__(self, declarations: Any) -> None:
        self.by_tool: dict[str, list[dict[str, frozenset[str]]]] = {}
        for item in declarations or ():
            if not isinstance(item, Mapping) or not isinstance(item.get("tool"), str):
                continue
            when = {
                str(arg): frozenset(
                    str(v) for v in (values if isinstance(values, list) else [values])
                )
                for arg, values in (item.get("when_args") or {}).items()
            }
            self.by_tool.setdefault(item["tool"], []).append(when)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> PollMatcher:
        """The poll tools the effective rules declare (else that option's schema default)."""
        return cls(marked_values(config, POLL_TOOLS))

    def matches(self, tool: str, args: Any) -> bool:
        """True when a call of `tool` with `args` is a declared poll."""
        conditions = self.by_tool.get(tool)
        if not conditions:
            return False
        for when in conditions:
            if not when:
                return True
            if isinstance(args, Mapping) and all(
                str(args.get(arg)) in values for arg, values in when.items()
            ):
                return True
        return False


class UnknownTools:
    """The compiled patterns and known tools of one policy: which failed calls report an
    unknown tool.

    When a completed call failed, the engine sets `Call.unknown` (and so `HistoryEntry.unknown`)
    to the missing tool's name before any detector's `after` runs: the first pattern matching
    the error text names it (its group `name`, else the called tool), else a call to a tool
    outside the known tools (when any are listed) is one. The step runs only when an active
    detector declares `reads_unknown_tools = True`, so a policy without one pays nothing.
    """

    __slots__ = ("patterns", "known")

    def __init__(self, patterns: Any, known: Any) -> None:
        compiled = (compiled_or_none(str(pattern), regex.IGNORECASE) for pattern in patterns or ())
        self.patterns = tuple(pattern for pattern in compiled if pattern is not None)
        self.known = frozenset(str(tool) for tool in known or ())

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> UnknownTools:
        return cls(marked_values(config, UNKNOWN_TOOL_PATTERNS), marked_values(config, KNOWN_TOOLS))

    def classify(self, tool: str, error: str) -> str | None:
        """The unknown tool a failure of `tool` with `error` reports, or None."""
        text = error[:SCAN_LIMIT]
        deadline = Deadline() if self.patterns else None  # all patterns share CALL_BUDGET_S
        for pattern in self.patterns:
            match = search(pattern, text, deadline)
            if match:
                return match.groupdict().get("name") or tool
        if self.known and tool not in self.known:
            return tool
        return None
