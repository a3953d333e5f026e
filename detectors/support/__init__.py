"""What the built-in detectors share, a concern a module; and `NO_OPTIONS`, the options
schema of a detector whose only option is `enabled` (loopguard adds it)."""

from typing import Any

NO_OPTIONS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
