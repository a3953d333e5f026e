"""Where each value of a rules document was written, and how to name it.

Every loader (YAML, JSON5) produces a `SourceDoc`: plain Python values plus a
map from a path inside the document (a tuple of keys and list indexes) to the
1-based line and column where that value, or its key, starts. A
`PositionIndex` stacks the source documents of an `extends:` chain so that a
finding about the merged document points at the file that wrote the value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from loopguard.findings import Finding

Path = tuple[Any, ...]
Pos = tuple[int, int]


@dataclass
class SourceDoc:
    """One parsed source: values, positions, and the problems met while parsing."""

    name: str
    data: Any = None
    positions: dict[Path, Pos] = field(default_factory=dict)
    key_positions: dict[Path, Pos] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    # Translated documents (OpenClaw blocks) name paths the way the user wrote them.
    display: dict[Path, str] = field(default_factory=dict)

    def error(
        self,
        pos: Pos,
        message: str,
        hint: str = "",
        code: str = "",
        path: Path = (),
        level: str = "error",
    ) -> None:
        """Record a finding at `pos`, naming `path` as a breadcrumb."""
        crumb = breadcrumb(self.data, path, self.display) if path else ""
        self.findings.append(Finding(self.name, pos[0], pos[1], level, message, crumb, hint, code))

    @property
    def has_errors(self) -> bool:
        return any(f.level == "error" for f in self.findings)


def _item_name(item: Any) -> str | None:
    """List items with an `id` (or `tool`) are named by it in breadcrumbs."""
    if isinstance(item, dict):
        for key in ("id", "tool"):
            value = item.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def breadcrumb(
    data: Any,
    path: Path,
    display: dict[Path, str] | None = None,
    written: Path | None = None,
) -> str:
    """`a.b[2].c`, with list items named by their `id`/`tool` when they have one.

    `written` (as long as `path`) is the same path as the user wrote it: a list index
    shown is the one in the file, even when an earlier item was left out (`prune`).
    """
    shown_steps = written if written is not None and len(written) == len(path) else path
    if display:
        for cut in range(len(path), 0, -1):
            shown = display.get(path[:cut])
            if shown is not None:
                rest = breadcrumb(_descend(data, path[:cut]), path[cut:], None, shown_steps[cut:])
                if not rest:
                    return shown
                return shown + (rest if rest.startswith("[") else "." + rest)
    text = ""
    node = data
    for step, shown_step in zip(path, shown_steps, strict=True):
        if isinstance(step, int):
            name = (
                _item_name(node[step]) if isinstance(node, list) and 0 <= step < len(node) else None
            )
            text += f".{name}" if name and text else name if name else f"[{shown_step}]"
        else:
            text += f".{step}" if text else str(step)
        node = _child(node, step)
    return text


def _child(node: Any, step: Any) -> Any:
    if isinstance(node, dict):
        return node.get(step)
    if isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
        return node[step]
    return None


def _descend(node: Any, path: Path) -> Any:
    for step in path:
        node = _child(node, step)
    return node


class PositionIndex:
    """Positions across the layers of a merged document (later layers win)."""

    def __init__(self, layers: Sequence[SourceDoc]) -> None:
        self.layers = list(layers)

    def owner(self, path: Path) -> SourceDoc | None:
        """The last layer that wrote a value at `path` (None when no layer did)."""
        for layer in reversed(self.layers):
            if path in layer.positions:
                return layer
        return None

    def locate(self, path: Path, at_key: bool = False) -> tuple[SourceDoc | None, Pos]:
        """The layer and position of `path`, or of its nearest written ancestor."""
        for cut in range(len(path), -1, -1):
            sub = path[:cut]
            layer = self.owner(sub) if sub else None
            if layer is not None:
                if at_key and cut == len(path) and sub in layer.key_positions:
                    return layer, layer.key_positions[sub]
                return layer, layer.positions[sub]
        last = self.layers[-1] if self.layers else None
        return last, (1, 1)

    def finding(
        self,
        data: Any,
        path: Path,
        level: str,
        message: str,
        hint: str = "",
        code: str = "",
        at_key: bool = False,
    ) -> Finding:
        """A finding about `path` of the merged `data`, placed where it was written."""
        layer, (line, col) = self.locate(path, at_key)
        name = layer.name if layer is not None else "<rules>"
        display = layer.display if layer is not None else None
        crumb = breadcrumb(data, path, display, _as_written(layer, path))
        return Finding(name, line, col, level, message, crumb, hint, code)


def _as_written(layer: SourceDoc | None, path: Path) -> Path | None:
    """`path` as the layer's file wrote it, when values before it were left out (`prune`)."""
    back = getattr(layer, "written_paths", None)
    if not back:
        return None
    for cut in range(len(path), 0, -1):
        written = back.get(path[:cut])
        if written is not None and len(written) == cut:
            return written + path[cut:]
    return None
