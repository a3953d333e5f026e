"""JSON Schema errors turned into findings a person can act on.

jsonschema's own messages quote whole instances and schemas; here each error
becomes one short sentence at the line:col of the offending value (or key),
with a breadcrumb and a hint: "unknown key 'warning_treshold' (did you mean
'warning_threshold'?)", "expected an integer, got 2.5". Integers are strict:
`10.0` is not a threshold, and neither is `true`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

import regex
from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import ValidationError
from referencing.exceptions import Unresolvable as _Unresolvable

from loopguard.config.positions import Path, PositionIndex, SourceDoc
from loopguard.findings import Finding
from loopguard.text.hints import did_you_mean, is_int
from loopguard.text.regexcheck import (
    MAX_PATTERN_CHARS,
    Deadline,
    PatternError,
    matches,
    safe_compile,
)

_TYPE_NAMES = {
    "integer": "a whole number",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}


# (code, level, stage, what it means): the codes raised here, as `lint --list-checks`
# and docs/rules.md document them
CODES = (
    (
        "unknown-key",
        "error",
        "schema",
        "A key the schema does not know (with a did-you-mean)."
        "\n\nFails: `loop_detection: {warning_treshold: 5}`.",
    ),
    (
        "required",
        "error",
        "schema",
        "A required key is missing.\n\nFails: an intent without `require: {tool: ...}`.",
    ),
    (
        "type",
        "error",
        "schema",
        "A value of the wrong type (integers are strict: `10.0` and "
        "`true` are not thresholds).\n\nFails: `loop_detection: {history_size: '30'}`.",
    ),
    (
        "range",
        "error",
        "schema",
        "A number outside its allowed range.\n\nFails: `loop_detection: {warning_threshold: -3}`.",
    ),
    (
        "enum",
        "error",
        "schema",
        "A value that is not one of the allowed words.\n\nFails: `turn: {normalize: [lowercase]}`.",
    ),
    (
        "condition",
        "error",
        "schema",
        "A condition mapping without exactly one operator.\n\nFails: `when: {}`.",
    ),
    (
        "too-long",
        "error",
        "schema",
        "A string longer than its limit.\n\nFails: a 600-character regex.",
    ),
    (
        "pattern",
        "error",
        "schema",
        "A string that does not have the required shape.\n\n"
        "Fails: a language code `EN-us` under `messages`.",
    ),
    (
        "schema",
        "error",
        "schema",
        "Any other schema violation (the schema words the message)."
        "\n\nFails: `store: {path: a.db, url: redis://x}` (exactly one of path/url).",
    ),
    (
        "regex-too-complex",
        "error",
        "schema",
        "A regular expression whose compiled size "
        "would exceed the budget (nested counted repeats; docs/limits.md), refused before "
        "compiling.\n\nFails: `patterns: ['(?:(?:(?:a{1000}){1000}){1000})']`.",
    ),
)


def _strict_int(checker: Any, instance: Any) -> bool:
    return is_int(instance)


REGEX_KEYWORD = "x-loopguard-regex"


def _python_regex(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
    """`x-loopguard-regex: true`: the `regex` package compiles the string (length bounded first).

    A keyword of our own rather than `format: regex`, which JSON Schema defines as
    ECMA-262: third-party validators ignore it instead of rejecting Python patterns.
    """
    if value is not True or not isinstance(instance, str) or len(instance) > MAX_PATTERN_CHARS:
        return
    try:
        safe_compile(instance, regex.IGNORECASE)
    except (regex.error, ValueError, OverflowError) as exc:
        yield ValidationError(f"pattern does not compile: {exc}", cause=exc)


_DEADLINE: ContextVar[Deadline | None] = ContextVar("loopguard_schema_deadline", default=None)
SCHEMA_PATTERN_BUDGET_S = 1.0  # all schema `pattern` matches of one document together


@contextmanager
def pattern_budget() -> Iterator[None]:
    """Every schema `pattern` match inside shares one `SCHEMA_PATTERN_BUDGET_S`, so a slow
    pattern costs a document at most that, not its number of values times a match's
    timeout (a nested use keeps the outer budget)."""
    if _DEADLINE.get() is not None:
        yield
        return
    token = _DEADLINE.set(Deadline(SCHEMA_PATTERN_BUDGET_S))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


@lru_cache(maxsize=256)
def _schema_pattern(source: str) -> Any:
    """A schema's `pattern`, compiled by `regex` after the complexity check (None: refused)."""
    try:
        return safe_compile(source)
    except (regex.error, ValueError, OverflowError):
        return None


def _bounded_pattern(validator: Any, source: Any, instance: Any, schema: Any) -> Any:
    """The `pattern` keyword under a time bound: a detector's schema may hold a slow pattern."""
    if not isinstance(instance, str) or not isinstance(source, str):
        return
    compiled = _schema_pattern(source)
    found = None if compiled is None else matches(compiled, instance, _DEADLINE.get())
    if found is None:
        yield ValidationError(
            f"could not be checked against the pattern {source!r} in time",
            validator="pattern-timeout",
        )
    elif not found:
        yield ValidationError(f"{instance!r} does not match {source!r}")


StrictValidator = validators.extend(
    Draft202012Validator,
    validators={REGEX_KEYWORD: _python_regex, "pattern": _bounded_pattern},
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _strict_int),
)

FORMATS = FormatChecker(formats=())


@FORMATS.checks("regex", raises=(regex.error, ValueError, OverflowError))
def _compiles(instance: object) -> bool:
    """`format: regex` (a plugin's schema may use it) is checked like `x-loopguard-regex`."""
    if isinstance(instance, str) and len(instance) <= MAX_PATTERN_CHARS:
        safe_compile(instance, regex.IGNORECASE)
    return True


_VALIDATORS: dict[str, Any] = {}


def validator_for(schema: dict[str, Any]) -> Any:
    """A (cached) strict Draft 2020-12 validator for `schema`."""
    key = json.dumps(schema, sort_keys=True)
    found = _VALIDATORS.get(key)
    if found is None:
        if len(_VALIDATORS) >= 8:
            _VALIDATORS.clear()
        found = _VALIDATORS[key] = StrictValidator(schema, format_checker=FORMATS)
    return found


def describe(value: Any) -> str:
    """`string 'ten'`, `number 2.5`, `list`, ... for messages."""
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return f"number {value!r}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {shown!r}"
    if isinstance(value, dict):
        return "a mapping"
    return "a list" if isinstance(value, list) else f"a Python {type(value).__name__}"


def kind_of(value: Any) -> str:
    """`a string`, `a number`, ... : the type only, never the content (it may be a secret)."""
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a mapping"
    return "a list" if isinstance(value, list) else f"a Python {type(value).__name__}"


def _is_detectors_block(path: Path) -> bool:
    return path[-1:] == ("detectors",) and (len(path) == 1 or path[0] == "agents")


class _Translator:
    def __init__(self, doc: SourceDoc) -> None:
        self.doc = doc
        self.index = PositionIndex([doc])

    def make(
        self, path: Path, message: str, hint: str = "", code: str = "schema", at_key: bool = False
    ) -> Finding:
        return self.index.finding(self.doc.data, path, "error", message, hint, code, at_key)

    def convert(self, err: ValidationError) -> list[Finding]:
        path = tuple(err.absolute_path)
        kind, value, inst = err.validator, err.validator_value, err.instance
        if kind == "additionalProperties" and isinstance(inst, dict):
            return self.unknown_keys(path, inst, err.schema)
        if kind == "required":
            missing = [k for k in value if isinstance(inst, dict) and k not in inst]
            return [
                self.make(path, f"missing required key {k!r}", f"add `{k}:` here", "required")
                for k in missing
            ]
        if kind == "type":
            return [self.type_error(path, value, inst)]
        if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
            sign = {
                "minimum": ">=",
                "exclusiveMinimum": ">",
                "maximum": "<=",
                "exclusiveMaximum": "<",
            }[kind]
            return [self.make(path, f"must be {sign} {value}, got {inst!r}", "", "range")]
        if kind == "enum":
            choices = [str(v) for v in value]
            extra = did_you_mean(str(inst), choices)
            return [
                self.make(
                    path,
                    f"{describe(inst)} is not allowed here{extra}",
                    f"use one of: {', '.join(choices)}",
                    "enum",
                )
            ]
        if kind in ("minProperties", "maxProperties") and "all" in err.schema.get("properties", {}):
            return [
                self.make(
                    path,
                    "a condition needs exactly one key",
                    "use one of: all, any, not, text_contains, text_equals, "
                    "context_contains; combine several with all/any",
                    "condition",
                )
            ]
        if kind == "minItems":
            return [self.make(path, "must not be empty", "", "empty")]
        if kind == "minLength":
            return [self.make(path, "must not be an empty string", "", "empty")]
        if kind == "maxLength" and isinstance(inst, str):
            return [
                self.make(
                    path,
                    f"too long: {len(inst)} characters (at most {value})",
                    "shorten it",
                    "too-long",
                )
            ]
        if isinstance(err.cause, PatternError):
            return [
                self.make(
                    path,
                    f"pattern refused: {err.cause}",
                    "simplify it: fewer or smaller nested counted repeats (see docs/limits.md)",
                    "regex-too-complex",
                )
            ]
        if kind == "pattern-timeout":
            return [
                self.make(
                    path,
                    err.message,
                    "the detector's options schema has a slow "
                    "pattern; shorten the value or report it to the plugin's authors",
                    "pattern",
                )
            ]
        if kind == REGEX_KEYWORD or (kind == "format" and value == "regex"):
            return [
                self.make(
                    path,
                    f"pattern does not compile: {err.cause}",
                    "fix the regular expression (regex syntax)",
                    "bad-regex",
                )
            ]
        if kind == "anyOf":  # only keyword-set references use anyOf
            return [
                self.make(
                    path,
                    f"expected a keyword set name or a list of names, got {describe(inst)}",
                    "",
                    "type",
                )
            ]
        if kind == "pattern":
            return [self.make(path, f"{describe(inst)} does not match {value}", "", "pattern")]
        custom = (
            (err.schema.get("x-message") or {}).get(kind) if isinstance(err.schema, dict) else None
        )
        if isinstance(
            custom, str
        ):  # the schema words this error itself (and never echoes a secret)
            return [self.make(path, custom, "", "schema")]
        return [self.make(path, err.message, "", "schema")]

    def type_error(self, path: Path, expected: Any, value: Any) -> Finding:
        wanted = expected if isinstance(expected, list) else [expected]
        names = " or ".join(str(_TYPE_NAMES.get(t, t)) for t in wanted)
        hint = ""
        if "string" in wanted and isinstance(value, (bool, int, float)):
            hint = "quote the value to make it a string"
        elif "integer" in wanted and isinstance(value, float):
            hint = "thresholds and sizes are whole numbers"
        elif "integer" in wanted and isinstance(value, str):
            hint = "write the number without quotes"
        return self.make(path, f"expected {names}, got {describe(value)}", hint, "type")

    def unknown_keys(
        self, path: Path, inst: dict[str, Any], schema: dict[str, Any]
    ) -> list[Finding]:
        known = list(schema.get("properties", {}))
        patterns = list(schema.get("patternProperties", {}))
        found = []
        for key in inst:
            if key in known or any(re.search(p, key) for p in patterns):
                continue
            if _is_detectors_block(path):
                message = f"unknown detector {key!r}{did_you_mean(key, known)}"
                hint = f"installed detectors: {', '.join(known)}" if known else ""
                code = "unknown-detector"
            else:
                message = f"unknown key {key!r}{did_you_mean(key, known)}"
                hint = f"allowed keys here: {', '.join(known)}" if known else ""
                code = "unknown-key"
            found.append(self.make(path + (key,), message, hint, code, at_key=True))
        return found


def schema_findings(doc: SourceDoc, schema: dict[str, Any]) -> list[Finding]:
    """Every schema violation of `doc.data`, as findings sorted by position."""
    translator = _Translator(doc)
    found: list[Finding] = []
    with pattern_budget():
        return _findings(doc, schema, translator, found)


def _findings(
    doc: SourceDoc, schema: dict[str, Any], translator: _Translator, found: list[Finding]
) -> list[Finding]:
    seen: set[tuple[int, int, str]] = set()
    try:
        for err in validator_for(schema).iter_errors(doc.data):
            for finding in translator.convert(err):
                key = (finding.line, finding.col, finding.message)
                if key not in seen:
                    seen.add(key)
                    found.append(finding)
    except (
        ReferenceError,
        LookupError,
        ValueError,
        TypeError,
        RecursionError,
        _Unresolvable,
    ) as exc:  # a detector's schema that cannot be applied: a finding
        found.append(
            translator.make(
                (),
                f"the rules schema could not be applied: {type(exc).__name__}",
                "a detector's options schema is broken; see `loopguard detectors`",
                "schema",
            )
        )
    found.sort(key=lambda f: (f.line, f.col))
    return found
