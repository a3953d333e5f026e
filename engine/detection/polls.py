"""Which calls are polls (`detectors.known_poll_no_progress.poll_tools`).

Shared by `known_poll_no_progress` (which watches only polls) and
`generic_repeat` (which leaves polls to it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class PollMatcher:
    """`tool` alone, or `tool` with `when_args: {arg: [values]}`."""

    def __init__(self, declarations: Any) -> None:
        self.by_tool: dict[str, list[dict[str, frozenset[str]]]] = {}
        for item in declarations or ():
            if not isinstance(item, Mapping) or not isinstance(item.get("tool"), str):
                continue
            when = {
                str(arg): frozenset(str(v) for v in (values if isinstance(values, list) else [values]))
                for arg, values in (item.get("when_args") or {}).items()
            }
            self.by_tool.setdefault(item["tool"], []).append(when)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> PollMatcher:
        block = (config.get("detectors") or {}).get("known_poll_no_progress") or {}
        return cls(block.get("poll_tools"))

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
