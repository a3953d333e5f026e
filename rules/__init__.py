"""The bundled rules packs (package data), loaded as `builtin:NAME`.

`default.yaml` is the base layer of every rules file and the one place the rules' default
values live: `bundled_defaults()` reads it for the schema's `default`s and the shared
settings' fallbacks. Any stage may import this module: it imports nothing of loopguard.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from importlib import resources
from typing import Any

# The leaf operators of a rules condition (`all`, `any` and `not` combine them): each tests the
# turn's text or its context. The schema's `condition` definition names the same keys.
CONDITION_LEAVES = ("text_contains", "text_equals", "context_contains")

_parsed: dict[str, Any] | None = None


def _bundled() -> dict[str, Any]:
    """`default.yaml` parsed once; never handed out (callers get copies)."""
    global _parsed
    if _parsed is None:
        import yaml  # on first use: a process that never reads a default need not load YAML

        text = resources.files(__name__).joinpath("default.yaml").read_text(encoding="utf-8")
        data = yaml.safe_load(text)
        _parsed = data if isinstance(data, dict) else {}
    return _parsed


def preload(data: dict[str, Any]) -> None:
    """Take `data` as `default.yaml`'s content instead of parsing it: for a cache that knows
    the file is unchanged (the hook process, which must not pay for YAML on every call)."""
    global _parsed
    _parsed = copy.deepcopy(data)
    _default.cache_clear()


def bundled_defaults() -> dict[str, Any]:
    """`default.yaml` as plain data (a fresh copy)."""
    return copy.deepcopy(_bundled())


@lru_cache(maxsize=256)
def _default(dotted: str) -> Any:
    value: Any = _bundled()
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def default(dotted: str) -> Any:
    """The bundled default of one setting (`turn.max_tool_rounds`), None when it has none.

    Code that reads a setting a rules dict may lack (a mapping handed to `Guard` as is)
    falls back to this, never to a literal of its own.
    """
    value = _default(dotted)
    return copy.deepcopy(value) if isinstance(value, (dict, list)) else value
