"""Shared settings found by a mark in a detector's options schema, not by a detector's id.

Some settings are concepts more than one detector (or the engine) uses, but users
write them as an option of the detector that introduced them: the poll tools
(`detectors.known_poll_no_progress.poll_tools`) and the unknown-tool error
patterns and known tools (`detectors.unknown_tool_repeat.patterns`, `known_tools`).
That detector marks the option in its options schema; the engine finds every
registered option carrying a mark and reads its effective value (else the
option's schema default). The rules format stays as users wrote it.
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
        properties = entry.options_schema.get("properties") or {}
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
