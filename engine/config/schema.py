"""The rules schema: assembled from the core and the detectors' options, validated, pruned.

`schemas/rules.schema.json` describes everything but the detectors' options. Assembly puts each
registered detector's `options_schema` under `properties.detectors.properties.<id>` with the
`enabled` switch, closed unless the detector chose otherwise, and closes `detectors`: an unknown
detector id is an error and a plugin's options are linted like the built-ins'. Every property
`rules/default.yaml` sets gets that value as its `default`, so editors show the real defaults
(on the referring property, never on a shared definition).

Each schema error becomes one short finding at the line:col of the offending value (or key), with
a hint; integers are strict (`10.0` and `true` are not thresholds). Lint reports everything in one
pass, so `prune_invalid` removes each rejected value and validates again until nothing more is
rejected; an object missing a required key stays, and positions move with the values.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import regex
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError
from referencing.exceptions import Unresolvable as _Unresolvable

from loopguard.config.source import Path, PositionIndex, SourceDoc
from loopguard.detection.plugins import load_registry, registry_or_none
from loopguard.findings import Finding, codes
from loopguard.rules import bundled_defaults
from loopguard.text.hints import did_you_mean, is_int
from loopguard.text.regexcheck import (
    MAX_PATTERN_CHARS,
    Deadline,
    PatternError,
    compiled_or_none,
    matches,
    safe_compile,
)


@dataclass(frozen=True)
class Assembly:
    """The assembled schema, the detector ids it knows, and the registry's faults."""

    schema: dict[str, Any]
    detector_ids: tuple[str, ...]
    problems: tuple[str, ...]
    closed: bool  # True when detector ids are known (unknown ids are errors)


def core_schema() -> dict[str, Any]:
    """A fresh copy of the core schema (package data)."""
    text = resources.files("loopguard.schemas").joinpath("rules.schema.json").read_text("utf-8")
    result: dict[str, Any] = json.loads(text)
    return result


def _options_schema(detector: Any) -> dict[str, Any]:
    """A copy of the detector's options schema, with `enabled` added and closed by default,
    described by the first line of the detector's module docstring (without its `id — `)."""
    result = copy.deepcopy(detector.options_schema)
    # Its own base URI, so the plugin's local `$ref`s (`#/$defs/...`) resolve inside it
    # once it sits under `properties.detectors.properties.<id>` of the master schema.
    result.setdefault("$id", f"urn:loopguard:detector:{detector.id}")
    inner = getattr(detector, "detector", detector)
    module = sys.modules.get(type(inner).__module__)
    doc = getattr(module, "__doc__", None) or type(inner).__doc__ or ""
    text = (doc.strip().splitlines() or [""])[0].split(" — ", 1)[-1].strip()
    summary = text[:1].upper() + text[1:] or f"Options of the {detector.id} detector."
    result.setdefault("description", summary)
    result.setdefault("type", "object")
    enabled = {"description": "Turn this detector on or off.", "type": "boolean"}
    result.setdefault("properties", {}).setdefault("enabled", enabled)
    result.setdefault("additionalProperties", False)
    return result


def assemble(detectors: Iterable[Any] | None = None) -> Assembly:
    """Core schema + options of `detectors` (default: the plugin registry's, its faults the
    problems). Registration already refused bad or repeated ids and unusable schemas."""
    schema = core_schema()
    problems: tuple[str, ...] = ()
    if detectors is None:
        try:
            registry = load_registry()
        except Exception as exc:  # noqa: BLE001 - a broken plugin setup must not break lint
            problem = f"detector registry failed to load: {type(exc).__name__}: {exc}"
            return Assembly(schema, (), (problem,), closed=False)
        detectors = [entry.detector for entry in registry.entries]
        problems = tuple(str(f) for f in registry.faults)
    listed = list(detectors)
    block = schema["properties"]["detectors"]
    for detector in listed:
        block["properties"][detector.id] = _options_schema(detector)
    block["additionalProperties"] = False
    # Every property `rules/default.yaml` sets gets that value as its `default`; each language
    # the defaults write gets its own copy of the templates, for its defaults.
    values = {k: v for k, v in bundled_defaults().items() if k not in ("version", "extends")}
    languages, templates = schema["$defs"]["messages"]["properties"], schema["$defs"]["templates"]
    for lang in values.get("messages") or {}:
        description = f"Texts in language {lang!r} (bundled defaults shown)."
        languages.setdefault(lang, {**copy.deepcopy(templates), "description": description})
    _put(schema, schema, values)
    return Assembly(schema, tuple(d.id for d in listed), problems, closed=True)


def regex_options(assembly: Assembly) -> list[tuple[str, str, bool]]:
    """(detector id, option, holds a list) of each detector option whose value (or whose list
    items) a detector marks as a user regex (`x-loopguard-regex: true` or `format: regex`):
    the patterns loading compiles and lint checks for backtracking. An open assembly (one
    built without the registry) asks the registry's assembly which options those are."""
    if not assembly.closed:
        assembly = default_assembly()
    found = []
    detectors = assembly.schema["properties"]["detectors"]["properties"]
    for ident in assembly.detector_ids:
        for option, prop in detectors[ident]["properties"].items():
            items = prop.get("items") if isinstance(prop, dict) else None
            for many, node in ((False, prop), (True, items)):
                if isinstance(node, dict) and (
                    node.get(REGEX_KEYWORD) is True or node.get("format") == "regex"
                ):
                    found.append((ident, option, many))
                    break
    return found


def default_assembly() -> Assembly:
    """The registry's assembly, built once per registry object (a registry hashes by identity).
    An open assembly — the registry could not be read — is not kept, so a passing failure
    never sticks to a registry that works."""
    registry = registry_or_none()
    return assemble() if registry is None else _registry_assembly(registry)


@lru_cache(maxsize=4)
def _registry_assembly(registry: Any) -> Assembly:
    return assemble()


# definitions used in many places: a default goes on the referring property
_SHARED = {f"#/$defs/{n}" for n in ("count", "names", "pattern", "set_ref", "condition")}


def _resolve(schema: dict[str, Any], node: Any) -> Any:
    """Follow local `$ref`s (`#/a/b`) to the node they name."""
    seen = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 8:
        target: Any = schema
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        if target is None:
            return node
        node, seen = target, seen + 1
    return node


def _put(schema: dict[str, Any], node: dict[str, Any], values: dict[str, Any]) -> None:
    """Each of `values` as the `default` of its property under `node`, a mapping of them into
    the property's own properties."""
    props = _resolve(schema, node)["properties"]  # the root, or a node checked to have them
    for key, value in values.items():
        prop = props.get(key)
        if not isinstance(prop, dict):
            continue
        inner = _resolve(schema, prop)
        if (
            isinstance(value, dict)
            and isinstance(inner, dict)
            and isinstance(inner.get("properties"), dict)
            and prop.get("$ref") not in _SHARED
        ):
            _put(schema, prop, value)
        else:
            prop["default"] = value


CODES = codes(  # the codes raised here (the table's form: `findings.codes`)
    """
unknown-key error schema
    A key the schema does not know (with a did-you-mean).

    Fails: `loop_detection: {warning_treshold: 5}`.
required error schema
    A required key is missing.

    Fails: an intent without `require: {tool: ...}`.
type error schema
    A value of the wrong type (integers are strict: `10.0` and `true` are not thresholds).

    Fails: `loop_detection: {history_size: '30'}`.
range error schema
    A number outside its allowed range.

    Fails: `loop_detection: {warning_threshold: -3}`.
enum error schema
    A value that is not one of the allowed words.

    Fails: `turn: {normalize: [lowercase]}`.
condition error schema
    A condition mapping without exactly one operator.

    Fails: `when: {}`.
too-long error schema
    A string longer than its limit.

    Fails: a 600-character regex.
pattern error schema
    A string that does not have the required shape.

    Fails: a language code `EN-us` under `messages`.
schema error schema
    Any other schema violation (the schema words the message).

    Fails: `store: {path: a.db, url: redis://x}` (exactly one of path/url).
regex-too-complex error schema
    A regular expression whose compiled size would exceed the budget (nested counted
    repeats; docs/limits.md), refused before compiling.

    Fails: `patterns: ['(?:(?:(?:a{1000}){1000}){1000})']`.
"""
)


REGEX_KEYWORD = "x-loopguard-regex"


def _python_regex(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
    """`x-loopguard-regex: true`: the `regex` package compiles the string (length bounded first).

    A keyword of our own rather than `format: regex`, which JSON Schema defines as
    ECMA-262: third-party validators ignore it instead of rejecting Python patterns. A
    plugin's `format: regex` is checked the same way (no other format is).
    """
    if value is not True or not isinstance(instance, str) or len(instance) > MAX_PATTERN_CHARS:
        return
    try:
        safe_compile(instance, regex.IGNORECASE)
    except (regex.error, ValueError, OverflowError) as exc:
        yield ValidationError(f"pattern does not compile: {exc}", cause=exc)


# The deadline all schema `pattern` matches of one validation share (set by `_violations`), so a
# slow pattern costs a document at most `SCHEMA_PATTERN_BUDGET_S`, not its number of values
# times a match's timeout.
_DEADLINE: ContextVar[Deadline | None] = ContextVar("loopguard_schema_deadline", default=None)
SCHEMA_PATTERN_BUDGET_S = 1.0


def _bounded_pattern(validator: Any, source: Any, instance: Any, schema: Any) -> Any:
    """The `pattern` keyword under a time bound: a detector's schema may hold a slow pattern."""
    if not isinstance(instance, str) or not isinstance(source, str):
        return
    compiled = compiled_or_none(source)  # (None: refused by the complexity check)
    found = None if compiled is None else matches(compiled, instance, _DEADLINE.get())
    if found is None:
        message = f"could not be checked against the pattern {source!r} in time"
        yield ValidationError(message, validator="pattern-timeout")
    elif not found:
        yield ValidationError(f"{instance!r} does not match {source!r}")


StrictValidator = validators.extend(
    Draft202012Validator,
    validators={
        REGEX_KEYWORD: _python_regex,
        "format": lambda v, value, i, s: _python_regex(v, value == "regex", i, s),
        "pattern": _bounded_pattern,
    },
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda checker, instance: is_int(instance)
    ),
)


_VALIDATORS: dict[str, Any] = {}


def validator_for(schema: dict[str, Any]) -> Any:
    """A (cached) strict Draft 2020-12 validator for `schema`."""
    key = json.dumps(schema, sort_keys=True)
    found = _VALIDATORS.get(key)
    if found is None:
        if len(_VALIDATORS) >= 8:
            _VALIDATORS.clear()
        found = _VALIDATORS[key] = StrictValidator(schema)
    return found


def describe(value: Any, content: bool = True) -> str:
    """`string 'ten'`, `number 2.5`, `a list`, ... for messages; without `content`, the type
    only (`a string`, `a number`), never the value (it may be a secret)."""
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        kind, shown = "boolean", str(value).lower()
    elif isinstance(value, (int, float)):
        kind, shown = "number", repr(value)
    elif isinstance(value, str):
        kind, shown = "string", repr(value if len(value) <= 40 else value[:37] + "...")
    else:
        return f"a Python {type(value).__name__}"
    return f"{kind} {shown}" if content else f"a {kind}"


_TYPE_NAMES = {
    "integer": "a whole number",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}
_SIGNS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}


def _explain(err: ValidationError) -> tuple[str, str, str]:
    """(message, hint, code) of a schema error other than unknown and missing keys."""
    kind, value, inst = err.validator, err.validator_value, err.instance
    if kind == "type":
        wanted = value if isinstance(value, list) else [value]
        names = " or ".join(str(_TYPE_NAMES.get(t, t)) for t in wanted)
        hint = ""
        if "string" in wanted and isinstance(inst, (bool, int, float)):
            hint = "quote the value to make it a string"
        elif "integer" in wanted and isinstance(inst, float):
            hint = "thresholds and sizes are whole numbers"
        elif "integer" in wanted and isinstance(inst, str):
            hint = "write the number without quotes"
        return f"expected {names}, got {describe(inst)}", hint, "type"
    if kind in _SIGNS:
        return f"must be {_SIGNS[kind]} {value}, got {inst!r}", "", "range"
    if kind == "enum":
        choices = [str(v) for v in value]
        message = f"{describe(inst)} is not allowed here{did_you_mean(str(inst), choices)}"
        return message, f"use one of: {', '.join(choices)}", "enum"
    if kind in ("minProperties", "maxProperties") and "all" in err.schema.get("properties", {}):
        hint = "use one of: all, any, not, text_contains, text_equals, context_contains; combine "
        return "a condition needs exactly one key", hint + "several with all/any", "condition"
    if kind == "minItems":
        return "must not be empty", "", "empty"
    if kind == "minLength":
        return "must not be an empty string", "", "empty"
    if kind == "maxLength" and isinstance(inst, str):
        return f"too long: {len(inst)} characters (at most {value})", "shorten it", "too-long"
    if isinstance(err.cause, PatternError):
        hint = "simplify it: fewer or smaller nested counted repeats (see docs/limits.md)"
        return f"pattern refused: {err.cause}", hint, "regex-too-complex"
    if kind == "pattern-timeout":
        hint = "the detector's options schema has a slow pattern; shorten the value or report it"
        return err.message, hint + " to the plugin's authors", "pattern"
    if kind == REGEX_KEYWORD or (kind == "format" and value == "regex"):
        hint = "fix the regular expression (regex syntax)"
        return f"pattern does not compile: {err.cause}", hint, "bad-regex"
    if kind == "anyOf":  # only keyword-set references use anyOf
        message = f"expected a keyword set name or a list of names, got {describe(inst)}"
        return message, "", "type"
    if kind == "pattern":
        return f"{describe(inst)} does not match {value}", "", "pattern"
    # the schema may word this error itself (and never echo a secret)
    custom = (err.schema.get("x-message") or {}).get(kind) if isinstance(err.schema, dict) else None
    return custom if isinstance(custom, str) else err.message, "", "schema"


def _violations(data: Any, schema: dict[str, Any]) -> Iterator[tuple[Path, str, str, str, bool]]:
    """(path, message, hint, code, at the key) of each schema violation of `data`: one per
    unknown key and per missing required key, every `pattern` match under one budget."""
    token = _DEADLINE.set(Deadline(SCHEMA_PATTERN_BUDGET_S))
    try:  # errors listed first: a suspended generator would keep the budget set
        errors = list(validator_for(schema).iter_errors(data))
    finally:
        _DEADLINE.reset(token)
    for err in errors:
        path, inst, kind = tuple(err.absolute_path), err.instance, err.validator
        if kind == "additionalProperties" and isinstance(inst, dict):
            known = list(err.schema.get("properties", {}))
            patterns = list(err.schema.get("patternProperties") or {})
            detectors = path[-1:] == ("detectors",) and (len(path) == 1 or path[0] == "agents")
            what = "detector" if detectors else "key"
            hint = "installed detectors" if detectors else "allowed keys here"
            hint = f"{hint}: {', '.join(known)}" if known else ""
            for k in inst:
                if k in known or any(re.search(p, str(k)) for p in patterns):
                    continue  # allowed by `properties` or `patternProperties`
                message = f"unknown {what} {k!r}{did_you_mean(k, known)}"
                yield path + (k,), message, hint, f"unknown-{what}", True
        elif kind == "required":
            for k in err.validator_value:
                if isinstance(inst, dict) and k not in inst:
                    hint = f"add `{k}:` here"
                    yield path, f"missing required key {k!r}", hint, "required", False
        else:
            yield path, *_explain(err), False


_CANNOT_APPLY = (ReferenceError, LookupError, ValueError, TypeError, RecursionError, _Unresolvable)


def schema_findings(doc: SourceDoc, schema: dict[str, Any]) -> list[Finding]:
    """Every schema violation of `doc.data`, as findings sorted by position."""
    index = PositionIndex([doc])
    found: dict[tuple[int, int, str], Finding] = {}  # the first of each place and message
    try:
        for path, message, hint, code, at_key in _violations(doc.data, schema):
            finding = index.finding(doc.data, path, "error", message, hint, code, at_key)
            found.setdefault((finding.line, finding.col, finding.message), finding)
    except _CANNOT_APPLY as exc:  # a detector's schema that cannot be applied: a finding
        message = f"the rules schema could not be applied: {type(exc).__name__}"
        hint = "a detector's options schema is broken; see `loopguard detectors`"
        found[(0, 0, "")] = index.finding(doc.data, (), "error", message, hint, "schema", False)
    return sorted(found.values(), key=lambda f: (f.line, f.col))


MAX_ROUNDS = 16


def _without(data: Any, bad: set[Path]) -> tuple[Any, dict[Path, Path]]:
    """A copy of `data` without the `bad` paths, and old path -> new path of what is kept."""
    moved: dict[Path, Path] = {(): ()}

    def copy(node: Any, old: Path, new: Path) -> Any:
        if not isinstance(node, (dict, list)):
            return node
        keyed = isinstance(node, dict)
        kept: dict[Any, Any] = {}  # a list's kept items by their new index
        for key, value in node.items() if isinstance(node, dict) else enumerate(node):
            if old + (key,) not in bad:
                moved[old + (key,)] = here = new + (key if keyed else len(kept),)
                kept[here[-1]] = copy(value, old + (key,), here)
        return kept if keyed else list(kept.values())

    return copy(data, (), ()), moved


def prune_invalid(doc: SourceDoc, schema: dict[str, Any]) -> SourceDoc | None:
    """`doc` without every value the schema rejects (findings kept); None if nothing is left."""
    data, removed = doc.data, set[Path]()
    back = {p: p for p in doc.positions}  # path now -> path as written
    for _ in range(MAX_ROUNDS):
        # unknown keys go one by one; a missing required key rejects nothing that is there
        # (the checks read objects with `.get`)
        bad = {path for path, _, _, code, _ in _violations(data, schema) if code != "required"}
        if () in bad:
            return None
        if not bad:
            now = {w: p for p, w in back.items()}  # path as written -> path now
            tables: list[dict[Path, Any]] = [doc.positions, doc.key_positions, doc.display]
            pos, keys, shown = ({now[w]: v for w, v in t.items() if w in now} for t in tables)
            return SourceDoc(
                doc.name, data, pos, keys, doc.findings, shown, doc.data, removed, back
            )
        removed.update(back.get(p, p) for p in bad)
        data, moved = _without(data, bad)
        back = {new: back.get(old, old) for old, new in moved.items()}
    return None
