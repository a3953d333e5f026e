"""Shared settings found by a mark in a detector's options schema, and the poll matcher.

Some settings are concepts more than one detector (or the engine) uses, but users
write them as an option of the detector that introduced them: the poll tools
(`detectors.known_poll_no_progress.poll_tools`) and the unknown-tool error
patterns and known tools (`detectors.unknown_tool_repeat.patterns`, `known_tools`).
That detector marks the option in its options schema; the engine finds every
registered option carrying a mark and reads its effective value (else the
option's schema default), so it never names a detector. `PollMatcher` is the one
classification of polls every detector reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopguard.detection.plugins import load_registry

POLL_TOOLS = "x-loopguard-poll-tools"  # a list of {tool, when_args} poll declarations
UNKNOWN_TOOL_PATTERNS = "x-loopguard-unknown-tool-patterns"  # regexes finding an unknown tool
KNOWN_TOOLS = "x-loopguard-known-tools"  # tools that exist, whatever a result says


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
