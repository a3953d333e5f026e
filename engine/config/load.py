"""Loading a rules file: parse, check `version`, validate, follow `extends:`, merge.

Layers, first to last: `builtin:default` (always the base), then each
`extends:` entry in order (`builtin:NAME` is `rules/NAME.yaml` of the
installed package; anything else is a path relative to the including file),
each expanded the same way, then the file itself. A layer met twice is
applied once; a cycle is an error. Mappings merge key by key, lists and
scalars replace; `agents` is kept as written (see `source.effective_config`). The merged
document then gets the checks that block loading (`BLOCKING`, modules of `lint.checks`).

The layering itself lives in `layers`. `load_rules_*` raise `RulesError` with every error found;
warnings are kept in `RulesDocument.findings`. `analyze_*` never raise: lint uses them to show
everything, and to tell an unreadable file (exit 2) from an invalid one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from loopguard.config.layers import (
    BUILTIN,
    Analysis,
    analyze_doc,
    builtin_names,
    builtin_source,
    check_root,
    decode,
    parse_text,
    read_path,
)
from loopguard.config.schema import Assembly, default_assembly
from loopguard.config.source import Path, RulesDocument, SourceDoc, check_values, plain_copy
from loopguard.errors import RulesError
from loopguard.findings import Finding
from loopguard.lint.checks import bad_regex, template, undefined_set, unknown_detector
from loopguard.lint.checks.context import LintContext, scopes
from loopguard.text.hints import is_int


def _mapping_doc(mapping: Mapping[str, Any], name: str) -> SourceDoc:
    """A source doc for an in-memory mapping: every path is at 0:0 (no position).

    The mapping is copied iteratively (dicts and lists), so a cyclic or very deep
    one is an error in the doc, not a RecursionError.
    """
    doc = SourceDoc(name)
    data = plain_copy(mapping, doc)
    if doc.has_errors:
        return doc
    doc.data = data
    stack: list[tuple[Path, Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        doc.positions[path] = (0, 0)
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    doc.error(
                        (0, 0),
                        f"key {_safe_repr(key)} is not a string",
                        "use string keys",
                        "key-type",
                        path=path,
                    )
                    continue
                doc.key_positions[path + (key,)] = (0, 0)
                stack.append((path + (key,), item))
        elif isinstance(value, list):
            stack.extend((path + (i,), item) for i, item in enumerate(value))
    check_values(doc)
    return doc


def _safe_repr(value: Any) -> str:
    """A short repr that never raises (a key may be any object, even a huge integer)."""
    if is_int(value) and abs(value) > 10**30:
        return "(a very large integer)"
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not break loading
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


BY_SCOPE = (undefined_set, unknown_detector, bad_regex)  # a scope's errors are listed together
BLOCKING = (*BY_SCOPE, template)


def blocking_findings(
    data: dict[str, Any], layers: Sequence[SourceDoc], assembly: Assembly
) -> list[Finding]:
    """The errors of the `BLOCKING` checks over merged rules: those of `BY_SCOPE` scope by
    scope (global, then each agent's block), then the templates'."""
    ctx = LintContext(data, tuple(layers), assembly=assembly)
    found = [
        finding
        for prefix, _ in scopes(data)
        for module in BY_SCOPE
        for finding in module.check(replace(ctx, scope=prefix))
    ]
    return found + template.check(ctx)


def _analyze(
    doc: SourceDoc,
    ident: str,
    base_dir: str,
    assembly: Assembly | None,
    allow_extends_outside: bool = False,
) -> Analysis:
    """`layers.analyze_doc`, then the checks that block loading over the merged document."""
    assembly = assembly or default_assembly()
    result = analyze_doc(doc, ident, base_dir, assembly, allow_extends_outside)
    if result.data is not None:
        result.findings.extend(blocking_findings(result.data, result.layers, assembly))
    return result


def analyze_bytes(
    raw: bytes,
    name: str,
    base_dir: str | None = None,
    assembly: Assembly | None = None,
    allow_extends_outside: bool = False,
) -> Analysis:
    text, doc = decode(raw, name)
    if text is None:
        return Analysis(name, findings=list(doc.findings))
    return analyze_text(text, name, base_dir, assembly, allow_extends_outside)


def analyze_text(
    text: str,
    name: str = "<string>",
    base_dir: str | None = None,
    assembly: Assembly | None = None,
    allow_extends_outside: bool = False,
) -> Analysis:
    base = base_dir if base_dir is not None else os.getcwd()
    return _analyze(parse_text(text, name), f"text:{name}", base, assembly, allow_extends_outside)


def analyze_path(
    path: str | os.PathLike[str],
    assembly: Assembly | None = None,
    allow_extends_outside: bool = False,
) -> Analysis:
    name = os.fspath(path)
    raw, doc = read_path(name)
    if raw is None:
        return Analysis(name, findings=list(doc.findings), unreadable=True)
    text, doc = decode(raw, name)
    if text is None:
        return Analysis(name, findings=list(doc.findings))
    real = os.path.realpath(name)
    return _analyze(
        parse_text(text, name), real, os.path.dirname(real), assembly, allow_extends_outside
    )


def analyze_builtin(name: str, assembly: Assembly | None = None) -> Analysis:
    """Load a bundled pack by its `builtin:NAME` name."""
    found = builtin_source(name[len(BUILTIN) :]) if name.startswith(BUILTIN) else None
    if found is None:
        finding = Finding(
            name,
            1,
            1,
            "error",
            f"unknown bundled pack {name!r}",
            "",
            f"bundled packs: {', '.join(builtin_names())}",
            "unreadable",
        )
        return Analysis(name, findings=[finding], unreadable=True)
    return _analyze(parse_text(found[1], name), found[0], os.path.dirname(found[0]), assembly)


def analyze_mapping(
    mapping: Mapping[str, Any],
    name: str = "<mapping>",
    assembly: Assembly | None = None,
    allow_extends_outside: bool = False,
) -> Analysis:
    if not isinstance(mapping, Mapping):
        doc = SourceDoc(name, mapping, positions={(): (0, 0)})
        check_root(doc)
        return Analysis(name, findings=list(doc.findings))
    return _analyze(
        _mapping_doc(mapping, name), f"mapping:{name}", os.getcwd(), assembly, allow_extends_outside
    )


def _document(result: Analysis) -> RulesDocument:
    if result.errors or result.data is None:
        raise RulesError(
            result.errors
            or [Finding(result.source, 1, 1, "error", "the rules could not be loaded")]
        )
    warnings = [f for f in result.findings if f.level != "error"]
    return RulesDocument(result.data, warnings, result.source, tuple(result.layers))


def load_rules_path(
    path: str | os.PathLike[str], allow_extends_outside: bool = False
) -> RulesDocument:
    """Load a rules file (YAML, or OpenClaw JSON5) with its `extends:` layers.

    `builtin:NAME` loads a bundled pack, as `loopguard lint` does, so `replay --rules
    builtin:portfolio` and `Guard.from_file("builtin:portfolio")` work.
    """
    return load_path_analysis(path, allow_extends_outside)[0]


def load_path_analysis(
    path: str | os.PathLike[str], allow_extends_outside: bool = False
) -> tuple[RulesDocument, Analysis]:
    """`load_rules_path` and the analysis behind it (lint-only checks can run on a loaded file)."""
    name = os.fspath(path)
    result = (
        analyze_builtin(name)
        if name.startswith(BUILTIN)
        else analyze_path(name, allow_extends_outside=allow_extends_outside)
    )
    return _document(result), result


def load_rules_text(
    text: str, name: str = "<string>", allow_extends_outside: bool = False
) -> RulesDocument:
    """Load rules from text; relative `extends:` entries resolve from the working directory."""
    return _document(analyze_text(text, name, allow_extends_outside=allow_extends_outside))


def load_rules_mapping(
    mapping: Mapping[str, Any], name: str = "<mapping>", allow_extends_outside: bool = False
) -> RulesDocument:
    """Load rules from a mapping with the keys of a rules file."""
    return _document(analyze_mapping(mapping, name, allow_extends_outside=allow_extends_outside))


__all__ = [
    "Analysis",
    "RulesDocument",
    "analyze_builtin",
    "analyze_bytes",
    "analyze_mapping",
    "analyze_path",
    "analyze_text",
    "builtin_names",
    "load_rules_mapping",
    "load_path_analysis",
    "load_rules_path",
    "load_rules_text",
]
