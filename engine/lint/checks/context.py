"""What a lint check is given: the merged rules, the linted file's own part, positions.

A check is a pure function of a `LintContext`; everything it needs is here,
nothing is kept between runs. `data` is the merged document (every layer,
`builtin:default` first), `top` is what the linted file itself wrote, `index`
places a path of `data` where it was written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from loopguard.config.effective import deep_merge
from loopguard.config.positions import Path, PositionIndex, SourceDoc
from loopguard.findings import Finding


@dataclass(frozen=True)
class LintContext:
    """The inputs of every lint check for one linted file."""

    data: dict[str, Any]
    layers: Sequence[SourceDoc]
    agents: tuple[str, ...] | None = None  # the agent names given on the command line
    gating: Mapping[str, str] | None = None  # detector id -> gating (None: from the registry)

    @property
    def top(self) -> dict[str, Any]:
        """What the linted file itself wrote (the last layer)."""
        data = self.layers[-1].data if self.layers else {}
        return data if isinstance(data, dict) else {}

    @property
    def top_name(self) -> str:
        return self.layers[-1].name if self.layers else ""

    @cached_property
    def index(self) -> PositionIndex:
        return PositionIndex(self.layers)

    @cached_property
    def written(self) -> list[dict[str, Any]]:
        """Each layer's data as written, rejected values included (`prune.PrunedDoc`)."""
        found = []
        for layer in self.layers:
            data = getattr(layer, "original", None)
            data = layer.data if data is None else data
            if isinstance(data, dict):
                found.append(data)
        return found

    @cached_property
    def removed(self) -> set[str]:
        """Dotted paths (`loop_detection.history_size`) of values the schema rejected."""
        return {
            ".".join(str(p) for p in path)
            for layer in self.layers
            for path in getattr(layer, "removed", ())
        }

    @cached_property
    def inherited(self) -> dict[str, Any]:
        """The merge of every layer below the linted file (what it would get by writing nothing)."""
        merged: dict[str, Any] = {}
        for layer in self.layers[:-1]:
            if isinstance(layer.data, dict):
                merged = deep_merge(merged, {k: v for k, v in layer.data.items() if k != "extends"})
        return merged

    def finding(
        self, path: Path, level: str, message: str, hint: str, code: str, at_key: bool = False
    ) -> Finding:
        """A finding about `path` of the merged document, placed where it was written."""
        return self.index.finding(self.data, path, level, message, hint, code, at_key)
