"""Which calls are polls: one classification, driven by the rules, for every detector.

The poll tools are a shared setting. It is written where users have always
written it, as an option of the detector that watches polls; that detector marks
the option in its options schema with `POLL_TOOLS` (`"x-loopguard-poll-tools":
true`), and `PollMatcher.from_config` finds it there (`marks`), so the engine
never names a detector. Detectors that leave polls alone (or wait longer for
them) read the same matcher.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopguard.detection.marks import POLL_TOOLS, marked_values

__all__ = ["POLL_TOOLS", "PollMatcher"]


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
