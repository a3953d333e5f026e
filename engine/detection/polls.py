"""Which calls are polls: one classification, driven by the rules, for every detector.

The poll tools are a shared setting. It is written where users have always
written it, as an option of the detector that watches polls; that detector marks
the option in its options schema with `POLL_TOOLS` (`"x-loopguard-poll-tools":
true`), and `PollMatcher.from_config` finds it there, so the engine never names
a detector. Detectors that leave polls alone (or wait longer for them) read the
same matcher.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopguard.detection.registry import load_registry

POLL_TOOLS = "x-loopguard-poll-tools"  # marks the options schema property holding poll tools


def declared_poll_options() -> list[tuple[str, str, Any]]:
    """(detector id, option, schema default) of every registered option marked `POLL_TOOLS`."""
    found = []
    for entry in load_registry().entries:
        properties = entry.options_schema.get("properties") or {}
        for option, prop in properties.items():
            if isinstance(prop, Mapping) and prop.get(POLL_TOOLS) is True:
                found.append((entry.id, option, prop.get("default")))
    return found


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
        """The poll tools the effective rules declare (else that option's schema default)."""
        found: list[Any] = []
        for ident, option, default in declared_poll_options():
            block = (config.get("detectors") or {}).get(ident)
            value = block.get(option) if isinstance(block, Mapping) else None
            found.extend((value if value is not None else default) or ())
        return cls(found)

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
