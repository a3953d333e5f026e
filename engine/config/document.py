"""The record the rules loader hands out: a merged document that passed validation.

Only the loader (`loopguard.config.load`) builds a `RulesDocument`, after checking every
layer against the schema, so holding one means "validated": `Guard(document)` uses it as
is. It lives apart from the loader so that the Guard can name it without importing the
loading machinery (YAML, JSON Schema) at `import loopguard`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopguard.config.positions import PositionIndex, SourceDoc
from loopguard.findings import Finding


@dataclass(frozen=True)
class RulesDocument:
    """A merged, validated rules document (`data` uses native keys)."""

    data: dict[str, Any]
    findings: list[Finding]  # the warnings loading found (errors raise instead)
    source: str
    layers: tuple[SourceDoc, ...] = field(default=(), compare=False, repr=False)

    @property
    def positions(self) -> PositionIndex:
        return PositionIndex(self.layers)
