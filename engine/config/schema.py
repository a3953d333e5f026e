"""The JSON Schema a rules file is validated against: the core plus every detector's options.

`schemas/rules.schema.json` describes everything but the detectors' options.
Each registered detector declares an `options_schema`; assembly puts it under
`properties.detectors.properties.<id>`, adds the `enabled` switch, closes it
(`additionalProperties: false` unless the detector chose otherwise) and then
closes `detectors` itself, so an unknown detector id is an error. A plugin's
options are thus linted exactly like the built-ins'.

A detector whose options schema is not a valid Draft 2020-12 schema is left
out and reported in `Assembly.problems`; assembly itself never fails. Every
property the bundled `rules/default.yaml` sets gets that value as its
`default` (`schemadefaults`), so editors show the real defaults.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from loopguard.config.schemadefaults import add_defaults
from loopguard.detection.plugins import load_registry, schema_problem
from loopguard.detection.sandbox import safe_repr

CORE_SCHEMA = "rules.schema.json"


@dataclass(frozen=True)
class Assembly:
    """The assembled schema, the detector ids it knows, and what was left out and why."""

    schema: dict[str, Any]
    detector_ids: tuple[str, ...]
    problems: tuple[str, ...]
    closed: bool  # True when detector ids are known (unknown ids are errors)


@lru_cache(maxsize=1)
def _core_text() -> str:
    return resources.files("loopguard.schemas").joinpath(CORE_SCHEMA).read_text(encoding="utf-8")


def core_schema() -> dict[str, Any]:
    """A fresh copy of the core schema (package data)."""
    result: dict[str, Any] = json.loads(_core_text())
    return result


def _registered() -> tuple[list[Any] | None, list[str]]:
    """Detectors from the plugin registry, or None (with why) when it cannot load."""
    try:
        registry = load_registry()
    except Exception as exc:  # noqa: BLE001 - a broken plugin setup must not break lint
        return None, [f"detector registry failed to load: {type(exc).__name__}: {exc}"]
    problems = [str(fault) for fault in getattr(registry, "faults", ())]
    return list(registry.detectors), problems


def _summary(detector: Any) -> str:
    """The first line of the detector's module docstring, without its `id — ` prefix."""
    inner = getattr(detector, "detector", detector)
    module = sys.modules.get(type(inner).__module__)
    first = (
        (getattr(module, "__doc__", None) or type(inner).__doc__ or "").strip().splitlines() or [""]
    )[0]
    text = first.split(" — ", 1)[-1].strip()
    text = text[:1].upper() + text[1:]
    return text or f"Options of the {getattr(detector, 'id', '?')} detector."


def _options_schema(detector: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The detector's options schema with `enabled` added, or why it cannot be used."""
    ident = getattr(detector, "id", "?")
    source = getattr(detector, "source", "") or ident
    options = getattr(detector, "options_schema", None)
    if options is None:
        options = {"type": "object"}
    problem = schema_problem(str(ident), options)  # valid, local $refs, bounded patterns
    if problem:
        prefix = f"detector {str(ident)!r}"
        return None, f"{prefix} ({source}){problem[len(prefix) :]}; skipped"
    result = copy.deepcopy(options)
    # Its own base URI, so the plugin's local `$ref`s (`#/$defs/...`) resolve inside it
    # once it sits under `properties.detectors.properties.<id>` of the master schema.
    result.setdefault("$id", f"urn:loopguard:detector:{ident}")
    result.setdefault("description", _summary(detector))
    result.setdefault("type", "object")
    properties = result.setdefault("properties", {})
    if not isinstance(properties, dict):
        return None, f"detector {ident!r} ({source}): `properties` must be a mapping; skipped"
    properties.setdefault(
        "enabled", {"description": "Turn this detector on or off.", "type": "boolean"}
    )
    result.setdefault("additionalProperties", False)
    return result, None


def assemble(detectors: Iterable[Any] | None = None) -> Assembly:
    """Core schema + options of `detectors` (default: the plugin registry's)."""
    problems: list[str] = []
    listed: list[Any] | None
    if detectors is None:
        listed, problems = _registered()
    else:
        listed = list(detectors)
    schema = core_schema()
    if listed is None:
        return Assembly(schema, (), tuple(problems), closed=False)
    block = schema["properties"]["detectors"]
    ids: list[str] = []
    for detector in listed:
        ident = getattr(detector, "id", None)
        if not isinstance(ident, str) or not ident:
            problems.append(f"detector {safe_repr(detector)} has no id; skipped")
            continue
        if ident in ids:
            problems.append(f"detector {ident!r} is registered twice; the second is skipped")
            continue
        options, problem = _options_schema(detector)
        if options is None:
            problems.append(problem or f"detector {ident!r}: skipped")
            continue
        block["properties"][ident] = options
        ids.append(ident)
    block["additionalProperties"] = False
    add_defaults(schema)
    return Assembly(schema, tuple(ids), tuple(problems), closed=True)


def regex_options(assembly: Assembly) -> list[tuple[str, str, bool]]:
    """(detector id, option, holds a list) of each detector option whose value (or whose list
    items) a detector marks as a user regex (`x-loopguard-regex: true` or `format: regex`):
    the patterns loading compiles and lint checks for backtracking. An open assembly (one
    built without the registry) asks the registry's assembly which options those are."""
    if not assembly.closed:
        assembly = default_assembly()
    found = []
    detectors = assembly.schema["properties"]["detectors"].get("properties") or {}
    for ident in assembly.detector_ids:
        for option, prop in ((detectors.get(ident) or {}).get("properties") or {}).items():
            if not isinstance(prop, dict):
                continue
            items = prop.get("items")
            if _is_regex(prop):
                found.append((ident, option, False))
            elif isinstance(items, dict) and _is_regex(items):
                found.append((ident, option, True))
    return found


def _is_regex(node: dict[str, Any]) -> bool:
    return node.get("x-loopguard-regex") is True or node.get("format") == "regex"


def assemble_schema(detectors: Iterable[Any] | None = None) -> dict[str, Any]:
    """The assembled schema as a dict (see `assemble` for the problems met)."""
    return assemble(detectors).schema


_assemblies: dict[Any, Assembly] = {}  # registry object -> its assembly (a few at most)


def default_assembly() -> Assembly:
    """The registry's assembly, built once per registry object (keyed by the object itself,
    not its id, which a new registry may reuse). An open assembly — the registry could not
    be read — is not kept, so a passing failure never sticks to a registry that works."""
    try:
        registry: Any = load_registry()
    except Exception:  # noqa: BLE001 - same fallback as `assemble`
        registry = None
    found = _assemblies.get(registry)
    if found is None:
        found = assemble()
        if found.closed:
            if len(_assemblies) >= 4:
                _assemblies.pop(next(iter(_assemblies)))
            _assemblies[registry] = found
    return found
