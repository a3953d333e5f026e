"""The options both doom-loop detectors (`doom_loop_exact`, `doom_loop_fuzzy`) take, and
their compiled form: one schema, so the two read the same words the same way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def window_options(window: int) -> dict[str, Any]:
    """The options shared by the doom-loop detectors, with their defaults (`window` differs)."""
    return {
        "window": {
            "description": "How many recent calls are looked at (the current one included).",
            "type": "integer",
            "minimum": 1,
            "maximum": 64,  # history.RECENT: "seen lately"
            "default": window,
        },
        "threshold": {
            "description": "Occurrences in the window (the current call included) that "
            "make a doom loop.",
            "type": "integer",
            "minimum": 1,
            "default": 3,
        },
        "exempt": {
            "description": "Tools this detector never judges (and skips in its window).",
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "default": ["check_background_tasks"],
        },
        "outcome": {
            "description": "same: repeats count only with the same outcome; any: the same "
            "arguments are enough.",
            "enum": ["same", "any"],
            "default": "same",
        },
        "scope": {
            "description": "session: the window spans user turns; turn: it restarts each turn.",
            "enum": ["session", "turn"],
            "default": "session",
        },
        "level": {
            "description": "The vote when it trips: critical blocks the call with a message "
            "(repeated criticals escalate); breaker ends the run.",
            "enum": ["critical", "breaker"],
            "default": "critical",
        },
    }


def window_config(options: Mapping[str, Any]) -> dict[str, Any]:
    """The compiled `window_options` (`options` already holds every default)."""
    return {
        "window": int(options["window"]),
        "threshold": int(options["threshold"]),
        "same": options["outcome"] == "same",
        "turn_scope": options["scope"] == "turn",
        "level": options["level"],
        "exempt": frozenset(options["exempt"] or ()),
    }
