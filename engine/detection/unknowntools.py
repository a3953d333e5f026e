"""Which failed calls report an unknown tool: one engine step, driven by the rules.

When a completed call failed, the engine sets `Call.unknown` (and so `HistoryEntry.unknown`)
to the missing tool's name before any detector's `after` runs: the first pattern matching
the error text names it (its group `name`, else the called tool), else a call to a tool
outside the known tools (when any are listed) is one. The patterns and known tools are
marked options (`marks`). The step runs only when an active detector declares
`reads_unknown_tools = True`, so a policy without one pays nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import regex

from loopguard.detection.marks import KNOWN_TOOLS, UNKNOWN_TOOL_PATTERNS, marked_values
from loopguard.text.regexcheck import Deadline, compiled_or_none, search

SCAN_LIMIT = 4000  # characters of an error text searched


class UnknownTools:
    """The compiled patterns and known tools of one policy."""

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
