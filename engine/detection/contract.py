"""What the engine reads of a detector besides its checks: the declared contract.

A detector need not subclass `Detector`; these accessors give the base class's
answer for an attribute it does not declare. `contract_problem` checks the
declarations once, at registration (see `plugincheck.detector_problem`), so the
accessors can trust what a registered detector declares:

- `settings`: dotted paths of shared settings outside `detectors.<id>`;
- `lint_checks`: `LintCheck` records (codes checked by the lint registry);
- `bounded_by`: (threshold option, window option) pairs for `never-fires`;
- `openclaw_name`: its camelCase name in OpenClaw configs;
- `scratch_codec`: "json", "derived" or "custom" (with `encode_scratch`/`decode_scratch`);
- defaults: the `default` of each option in `options_schema` (a `defaults`
  attribute, the earlier way, is refused with the fix rather than silently ignored);
- `explain_options`: which own options `explain` shows (`explain_paths`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from loopguard.detection.detector import option_defaults

SCRATCH_CODECS = ("json", "derived", "custom")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")
_OPENCLAW = re.compile(r"^[a-z][A-Za-z0-9]*$")


def settings(detector: Any) -> tuple[str, ...]:
    return tuple(getattr(detector, "settings", ()))


def lint_checks(detector: Any) -> tuple[Any, ...]:
    return tuple(getattr(detector, "lint_checks", ()))


def bounded_by(detector: Any) -> tuple[tuple[str, str], ...]:
    return tuple(tuple(pair) for pair in getattr(detector, "bounded_by", ()))  # type: ignore[misc]


def openclaw_name(detector: Any) -> str:
    return str(getattr(detector, "openclaw_name", "") or "")


def scratch_codec(detector: Any) -> str:
    return str(getattr(detector, "scratch_codec", "json"))


def defaults(detector: Any) -> dict[str, Any]:
    schema = getattr(detector, "options_schema", None)
    return option_defaults(schema) if isinstance(schema, Mapping) else {}


def explain_paths(detector: Any) -> tuple[str, ...]:
    """The rules values `explain` shows for the detector's votes: its `loop_detection`
    settings, its own options (`explain_options`, else every option), its other settings."""
    loop = tuple(s for s in settings(detector) if s.startswith("loop_detection."))
    schema = getattr(detector, "options_schema", None)
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    names = getattr(detector, "explain_options", None)
    if names is None:
        names = tuple(k for k in (properties or {}) if k != "enabled")
    ident = getattr(detector, "id", "")
    return (
        loop
        + tuple(f"detectors.{ident}.{k}" for k in names)
        + tuple(s for s in settings(detector) if s not in loop)
    )


def contract_problem(ident: str, detector: Any) -> str | None:
    """Why the detector's declarations (beyond id, levels, schema) cannot be used, or None."""
    found = getattr(detector, "settings", ())
    if not isinstance(found, (tuple, list)) or not all(
        isinstance(s, str) and _DOTTED.match(s) and not s.startswith("detectors.") for s in found
    ):
        return (
            f"detector {ident!r}: `settings` must be a tuple of dotted paths outside "
            f"`detectors.` (e.g. 'loop_detection.warning_threshold')"
        )
    pairs = getattr(detector, "bounded_by", ())
    if not isinstance(pairs, (tuple, list)) or not all(
        isinstance(p, (tuple, list)) and len(p) == 2 and all(isinstance(x, str) for x in p)
        for p in pairs
    ):
        return f"detector {ident!r}: `bounded_by` must be (threshold, window) option-name pairs"
    name = getattr(detector, "openclaw_name", "")
    if name and not (isinstance(name, str) and _OPENCLAW.match(name)):
        return f"detector {ident!r}: `openclaw_name` must be a camelCase name"
    codec = getattr(detector, "scratch_codec", "json")
    if codec not in SCRATCH_CODECS:
        return f"detector {ident!r}: `scratch_codec` must be one of {', '.join(SCRATCH_CODECS)}"
    if codec == "custom" and not (
        callable(getattr(detector, "encode_scratch", None))
        and callable(getattr(detector, "decode_scratch", None))
    ):
        return (
            f'detector {ident!r}: `scratch_codec = "custom"` needs `encode_scratch` and '
            "`decode_scratch`"
        )
    if getattr(detector, "defaults", None):
        return (
            f"detector {ident!r}: `defaults` is no longer read; put each option's default "
            'in its options_schema property (`"default": ...`)'
        )
    checks = getattr(detector, "lint_checks", ())
    if not isinstance(checks, (tuple, list)):
        return f"detector {ident!r}: `lint_checks` must be a tuple of LintCheck records"
    return None
