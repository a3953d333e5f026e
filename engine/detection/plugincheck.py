"""What a detector plugin must be before the engine uses it, checked once at registration.

A plugin is third-party code: anything it hands over is checked here so that
nothing it does later can take the host down (docs/limits.md, "Plugins"):

- `id` a Python identifier, `check` and `configure` callable, `levels` a
  tuple or list of known levels, optional hooks (`after`, `compacted`)
  callable when present, `gating` a known value;
- `options_schema` a valid Draft 2020-12 schema whose `$ref`s are local
  (`#...`) and resolve, and whose `pattern`s and `patternProperties` keys pass
  the regular-expression limits (`regexcheck`; keys also free of ReDoS, as
  jsonschema matches them with `re`, without a timeout);
- attribute access, `repr` and the checks themselves may raise anything but
  `KeyboardInterrupt`: that makes the detector unusable, not the registry.

`autoload_disabled` reads `LOOPGUARD_DISABLE_PLUGIN_AUTOLOAD`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

from loopguard.decision import LEVELS, Vote
from loopguard.detection.contract import contract_problem
from loopguard.state.history import EVIDENCE_MAX
from loopguard.text.regexcheck import complexity_problem, redos_problem

log = logging.getLogger("loopguard")
GATINGS = ("rolling", "unless_disabled", "always")
OPTIONAL_HOOKS = ("after", "compacted")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")
MAX_COUNT = 2**63 - 1  # a vote's count and evidence seqs (a session's call numbers fit)
# An options schema's size: jsonschema checks a schema at ~0.6 ms a value (100,000
# properties hung registration); the largest built-in schema has 59 values.
MAX_SCHEMA_VALUES = 1_000
MAX_SCHEMA_DEPTH = 32


def autoload_disabled(value: str | None) -> bool:
    """Whether the env value disables third-party plugins (an unknown value does, and warns)."""
    text = (value or "").strip().lower()
    if text in _FALSE:
        return False
    if text not in _TRUE:
        log.warning(
            "loopguard: LOOPGUARD_DISABLE_PLUGIN_AUTOLOAD=%r is not one of 1/true/yes/on "
            "or 0/false/no/off; third-party plugins stay disabled",
            value,
        )
    return True


def safe_repr(value: Any) -> str:
    """`repr(value)`, or `<ClassName object>` when its `__repr__` raises; at most 120 characters."""
    try:
        text = repr(value)
    except BaseException as exc:  # noqa: BLE001 - a plugin's repr may do anything
        if isinstance(exc, KeyboardInterrupt):
            raise
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= 120 else text[:117] + "..."


def detector_problem(detector: Any, seen: set[str]) -> str | None:
    """Why a registered object cannot be used as a detector, or None."""
    try:
        return _problem(detector, seen)
    except BaseException as exc:  # noqa: BLE001 - a hostile attribute or property
        if isinstance(exc, KeyboardInterrupt):
            raise
        return f"detector {safe_repr(detector)} cannot be inspected: {type(exc).__name__}: {exc}"


def _problem(detector: Any, seen: set[str]) -> str | None:
    ident = getattr(detector, "id", None)
    if not isinstance(ident, str) or not ident.isidentifier():
        return f"detector {safe_repr(detector)} has no valid `id` (a Python identifier)"
    if ident in seen:
        return f"detector id {ident!r} is already registered"
    for name in ("check", "configure"):
        if not callable(getattr(detector, name, None)):
            return (
                f"detector {ident!r} has no `{name}` method (subclass loopguard.Detector "
                "to inherit the defaults)"
            )
    for name in OPTIONAL_HOOKS:
        hook = getattr(detector, name, None)
        if hook is not None and not callable(hook):
            return f"detector {ident!r}: `{name}` is not callable"
    levels = getattr(detector, "levels", None)
    if not isinstance(levels, (tuple, list)) or not all(
        isinstance(v, str) and v in LEVELS for v in levels
    ):
        return (
            f"detector {ident!r}: `levels` must be a tuple of {', '.join(LEVELS)}, "
            f"not {safe_repr(levels)}"
        )
    gating = getattr(detector, "gating", "always")
    if gating not in GATINGS:
        return f"detector {ident!r}: `gating` must be one of {', '.join(GATINGS)}"
    return contract_problem(ident, detector) or schema_problem(
        ident, getattr(detector, "options_schema", None)
    )


def schema_problem(ident: str, schema: Any) -> str | None:
    """Why a detector's options schema cannot be used, or None."""
    if not isinstance(schema, dict):
        return f"detector {ident!r}: options schema must be a mapping"
    too_big = _size_problem(schema)
    if too_big:
        return f"detector {ident!r}: options schema {too_big}"
    # jsonschema (~0.1 s to import) loads with the first schema checked, not with the registry:
    # a hook process whose plugins were checked before never needs it (loopguard.hooks)
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"detector {ident!r}: invalid options schema: {exc.message}"
    for where, value in _walk(schema):
        if where in ("$ref", "$dynamicRef") and isinstance(value, str):
            if not value.startswith("#"):
                return (
                    f"detector {ident!r}: options schema $ref {value!r} is not local "
                    "(only #... references are supported)"
                )
            if not _resolves(schema, value):
                return f"detector {ident!r}: options schema $ref {value!r} does not resolve"
        elif where == "pattern" and isinstance(value, str):
            problem = complexity_problem(value)
            if problem:
                return f"detector {ident!r}: options schema pattern refused: {problem}"
        elif where == "patternProperties" and isinstance(value, Mapping):
            for key in value:
                problem = complexity_problem(key) or redos_problem(key)
                if problem:
                    return (
                        f"detector {ident!r}: options schema patternProperties key "
                        f"refused: {problem}"
                    )
    return None


def _size_problem(schema: dict[str, Any]) -> str | None:
    """Why a schema is too large or deep to check (counted before jsonschema sees it)."""
    stack: list[tuple[Any, int]] = [(schema, 1)]
    values = 0
    while stack:
        item, depth = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            return f"is nested deeper than {MAX_SCHEMA_DEPTH} levels"
        children = item.values() if isinstance(item, Mapping) else item
        for value in children:
            values += 1
            if values > MAX_SCHEMA_VALUES:
                return f"has more than {MAX_SCHEMA_VALUES:,} values (keywords and items)"
            if isinstance(value, (Mapping, list)):
                stack.append((value, depth + 1))
    return None


def _walk(node: Any) -> Iterator[tuple[str, Any]]:
    """(key, value) of every mapping entry in a schema, iteratively."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            for key, value in item.items():
                yield str(key), value
                stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)


def _resolves(schema: dict[str, Any], ref: str) -> bool:
    """Does a local JSON pointer (`#`, `#/$defs/x`) name a value of the schema?"""
    pointer = ref[1:]
    if not pointer:
        return True
    if not pointer.startswith("/"):
        return any(k == "$anchor" and v == pointer for k, v in _walk(schema))
    node: Any = schema
    for part in pointer[1:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return True


def vote_problem(vote: Any) -> str | None:
    """Why a value a detector returned is not a usable `Vote`, or None (checked on every vote).

    A vote is read by the aggregator, logged, hashed (`key`) and serialised, so every
    field must have its declared type: a plugin's `Vote(..., count="3")` would crash there.
    Types are tested with `type()` before any comparison: a `str` subclass whose `__eq__`
    raises, or an object whose `__class__` raises, must be a fault, not an exception out of
    the host's call. Counts and evidence seqs are bounded (0..2**63-1, at most
    `EVIDENCE_MAX` evidence entries): `10**10000` broke the decision log line.
    """
    if type(vote) is not Vote:
        return f"returned {_short(vote)}, not a Vote"
    detector, level, count, key, message, evidence, code = vote
    if type(level) is not str or level not in LEVELS:
        return f"returned a Vote with level {_short(level)} (warn, critical or breaker)"
    if type(count) is not int:
        return f"returned a Vote whose count is {_short(count)}, not an integer"
    if not 0 <= count <= MAX_COUNT:
        return "returned a Vote whose count is not between 0 and 2**63-1"
    for name, value in (("detector", detector), ("key", key), ("message", message), ("code", code)):
        if type(value) is not str:
            return f"returned a Vote whose {name} is {_short(value)}, not a string"
    if type(evidence) is not tuple or any(type(e) is not int for e in evidence):
        return "returned a Vote whose evidence is not a tuple of integers"
    if len(evidence) > EVIDENCE_MAX or any(not 0 <= e <= MAX_COUNT for e in evidence):
        return (
            f"returned a Vote whose evidence has more than {EVIDENCE_MAX} entries or a seq "
            "outside 0..2**63-1"
        )
    return None


def _short(value: Any) -> str:
    return safe_repr(value)[:80]
