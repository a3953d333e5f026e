"""Where each value of the effective rules came from, and why a detector is on.

The effective rules of one agent are the layers merged (mappings key by key,
lists and scalars replace), the agent's block merged over the global blocks,
then the thresholds repaired (`source.effective_config`). Under those
rules the value of a leaf is the one written by the last layer whose data
holds that path (an ancestor replaced later would have removed it), so no
merge needs replaying: `trace` credits each leaf of the effective dict to
`file:line` of that layer (`builtin:NAME:line` for a bundled pack), the
agent's block first, and marks the values the repair changed `repaired`.

`explain_active` says in words what `policy.compile.is_active` decides, for
`loopguard detectors --rules`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopguard.config.source import Path, Repair, SourceDoc, effective_config
from loopguard.detection.detector import ROLLING, UNLESS_DISABLED

REPAIRED = "repaired"
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_ .\-/]*$")
_RESERVED = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"}
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class Effective:
    """One agent's effective rules, where each leaf came from, and the repairs made."""

    config: dict[str, Any]
    sources: dict[Path, str]  # leaf path -> "file:line", "builtin:NAME:line" or "repaired"
    repairs: list[tuple[Repair, str]]  # each repair with where the replaced value was written


def _holds(data: Any, path: Path) -> bool:
    for step in path:
        if isinstance(data, dict) and step in data:
            data = data[step]
        elif isinstance(data, list) and isinstance(step, int) and 0 <= step < len(data):
            data = data[step]
        else:
            return False
    return True


def _origin(layer: SourceDoc, path: Path) -> str:
    """`name:line` of `path`'s key in a layer (a block list starts a line below it), else
    of the value, else of its nearest positioned ancestor (aliases, `<<` merges)."""
    if not layer.positions:  # a layer no file wrote (the options schemas' defaults)
        return layer.name
    if path in layer.key_positions:
        return f"{layer.name}:{layer.key_positions[path][0]}"
    for cut in range(len(path), -1, -1):
        pos = layer.positions.get(path[:cut])
        if pos is not None:
            return f"{layer.name}:{pos[0]}"
    return f"{layer.name}:1"


def is_leaf(value: Any) -> bool:
    """Scalars, empty mappings and lists of scalars are shown (and credited) whole."""
    if isinstance(value, dict):
        return not value
    if isinstance(value, list):
        return not any(isinstance(item, (dict, list)) for item in value)
    return True


def leaves(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every leaf of a rules value with its path, in document order."""
    if is_leaf(value):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, path + (key,))
    else:
        for i, item in enumerate(value):
            yield from leaves(item, path + (i,))


def _writer(layers: Sequence[SourceDoc], path: Path) -> str | None:
    for layer in reversed(layers):
        if path[:1] != ("extends",) and _holds(layer.data, path):
            return _origin(layer, path)
    return None


def trace(
    layers: Sequence[SourceDoc], data: Mapping[str, Any], agent: str | None = None
) -> Effective:
    """The effective rules of `agent` over the merged `data` of `layers`, with sources."""
    config, repairs = effective_config(data, agent)
    sources: dict[Path, str] = {}
    for path, _value in leaves(config):
        found = _writer(layers, ("agents", agent) + path) if agent is not None else None
        sources[path] = found or _writer(layers, path) or "unknown"
    replaced = []
    for repair in repairs:
        path = tuple(repair.field.split("."))
        replaced.append((repair, sources.get(path, "unknown")))
        sources[path] = REPAIRED
    return Effective(config, sources, replaced)


def dotted(path: Path) -> str:
    """`loop_detection.warning_threshold`, `intents[0].id`, `outcomes.tools["a.b"].drop`."""
    text = ""
    for step in path:
        if isinstance(step, int):
            text += f"[{step}]"
        elif _BARE_KEY.match(str(step)):
            text += f".{step}" if text else str(step)
        else:
            text += f"[{json.dumps(step, ensure_ascii=False)}]"
    return text


def flow(value: Any) -> str:
    """A leaf as YAML text that reads back as the same value (quoted when it must be)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else ".inf" if value > 0 else "-.inf"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        plain = _PLAIN.match(value) and not value.endswith(" ") and value.lower() not in _RESERVED
        if plain:
            return value
        if value.isprintable() and value.strip() == value:  # readable regexes
            return "'" + value.replace("'", "''") + "'"
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "{}"
    return "[" + ", ".join(flow(item) for item in value) + "]"


def yaml_lines(value: Any, path: Path = (), indent: int = 0) -> list[tuple[str, Path | None]]:
    """Block-style YAML of a mapping or list: (line, leaf path or None for a header)."""
    pad = " " * indent
    lines: list[tuple[str, Path | None]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for step, item in items:
        here = path + (step,)
        head = f"{pad}{flow(step) if isinstance(step, str) else '-'}"
        sep = ":" if isinstance(step, str) else ""
        if is_leaf(item):
            lines.append((f"{head}{sep} {flow(item)}", here))
        elif isinstance(item, dict) and not isinstance(step, str):
            inner = yaml_lines(item, here, indent + 2)
            lines.append((f"{pad}- {inner[0][0][indent + 2 :]}", inner[0][1]))
            lines.extend(inner[1:])
        else:
            lines.append((f"{head}{sep}", None))
            lines.extend(yaml_lines(item, here, indent + 2))
    return lines


def render_text(effective: Effective, header: Sequence[str] = ()) -> str:
    """The effective rules as YAML, each leaf with a trailing `# from …` comment."""
    body = yaml_lines(effective.config)
    width = min(56, max((len(text) for text, leaf in body if leaf is not None), default=0))
    notes = {repair.field: f"was {repair.old} from {where}" for repair, where in effective.repairs}
    out = [f"# {line}" for line in header]
    for text, leaf in body:
        if leaf is None:
            out.append(text)
            continue
        source = effective.sources.get(leaf, "unknown")
        note = f"# from {source}" if source != REPAIRED else f"# repaired ({notes[dotted(leaf)]})"
        out.append(f"{text.ljust(width)}  {note}")
    return "\n".join(out) + "\n"


def to_json(effective: Effective) -> dict[str, Any]:
    """The JSON shape: `config`, a parallel `sources` map of dotted paths, and `repairs`."""
    return {
        "config": effective.config,
        "sources": {dotted(path): source for path, source in effective.sources.items()},
        "repairs": [
            {"path": repair.field, "old": repair.old, "new": repair.new, "from": where}
            for repair, where in effective.repairs
        ],
    }


def _state(enabled: Any) -> str:
    return "true" if enabled is True else "false" if enabled is False else "unset"


def explain_active(gating: str, options: Mapping[str, Any], enabled: Any) -> tuple[bool, str]:
    """(on?, why) as `policy.compile.is_active` decides it: own switch, master switch, gating."""
    own = options.get("enabled")
    master = f"loop_detection.enabled is {_state(enabled)}"
    if gating in (ROLLING, UNLESS_DISABLED) and enabled is False:
        return False, master + (", over its own switch" if own is True else "")
    if own is not None and isinstance(own, bool):
        return own, "own switch"
    if gating == ROLLING:
        return enabled is True, master
    if gating == UNLESS_DISABLED:
        return True, master
    return True, "on by default"
