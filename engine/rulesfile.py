"""Loading a rules file: parse, check `version`, validate, follow `extends:`, merge.

Layers, first to last: `builtin:default` (always the base), then each
`extends:` entry in order (`builtin:NAME` is `rules/NAME.yaml` of the
installed package; anything else is a path relative to the including file),
each expanded the same way, then the file itself. A layer met twice is
applied once; a cycle is an error. Mappings merge key by key, lists and
scalars replace; `agents` is kept as written (see `normalize`).

`load_rules_*` raise `RulesError` with every error found; warnings are kept
in `RulesDocument.findings`. `analyze_*` never raise: lint uses them to show
everything, and to tell an unreadable file (exit 2) from an invalid one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from .errors import RulesError
from .findings import Finding
from .lintchecks import load_checks
from .normalize import deep_merge
from .positions import Path, PositionIndex, SourceDoc
from .rulestext import decode, parse_text, read_path
from .schema import Assembly, default_assembly
from .validate import describe, schema_findings

BUILTIN = "builtin:"
BASE = "builtin:default"
SUPPORTED_VERSION = 1
MAX_EXTENDS_DEPTH = 32
_PACK_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


@dataclass(frozen=True)
class RulesDocument:
    """A merged, validated rules document (`data` uses native keys)."""

    data: dict[str, Any]
    findings: list[Finding]
    source: str
    layers: tuple[SourceDoc, ...] = field(default=(), compare=False, repr=False)

    @property
    def positions(self) -> PositionIndex:
        return PositionIndex(self.layers)


@dataclass
class Analysis:
    """Everything learnt while loading one rules source."""

    source: str
    layers: list[SourceDoc] = field(default_factory=list)
    data: dict[str, Any] | None = None
    findings: list[Finding] = field(default_factory=list)
    unreadable: bool = False

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "error"]

    @property
    def index(self) -> PositionIndex:
        return PositionIndex(self.layers)


def builtin_names() -> list[str]:
    """The bundled packs, as `builtin:NAME` names."""
    folder = resources.files("loopguard.rules")
    return sorted(BUILTIN + p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


@lru_cache(maxsize=16)
def _builtin_source(name: str) -> tuple[str, str] | None:
    """(identity, text) of a bundled pack, or None when there is no such pack."""
    if not _PACK_NAME.match(name):
        return None
    item = resources.files("loopguard.rules").joinpath(f"{name}.yaml")
    if not item.is_file():
        return None
    return os.path.realpath(str(item)), item.read_text(encoding="utf-8")


def check_root(doc: SourceDoc) -> bool:
    """Is the document a mapping with `version: 1`? (Checked before anything else.)"""
    data = doc.data
    if data is None and not doc.has_errors:
        doc.error((1, 1), "the rules file is empty", "start it with `version: 1`", "empty")
    if data is None or doc.has_errors:
        return False
    root = doc.positions.get((), (1, 1))
    if not isinstance(data, dict):
        doc.error(root, f"a rules file must be a mapping of keys to values, not {describe(data)}",
                  "start it with `version: 1`", "not-a-mapping")
        return False
    if "version" not in data:
        doc.error(root, "missing `version`", "add `version: 1` as the first line", "version")
        return False
    version = data["version"]
    where = doc.positions.get(("version",), root)
    if isinstance(version, int) and not isinstance(version, bool) and version > SUPPORTED_VERSION:
        doc.error(where, f"rules version {version} is newer than this loopguard understands "
                  f"(version {SUPPORTED_VERSION})", "upgrade loopguard-engine, or write "
                  "`version: 1` rules", "version", path=("version",))
        return False
    if version != SUPPORTED_VERSION or isinstance(version, bool):
        doc.error(where, f"unsupported rules version {version!r}", "write `version: 1`",
                  "version", path=("version",))
        return False
    return True


def _plain(value: Any) -> Any:
    """A copy with mappings as dicts and tuples as lists (what a YAML file would give)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _mapping_doc(mapping: Mapping[str, Any], name: str) -> SourceDoc:
    """A source doc for an in-memory mapping: every path is at 0:0 (no position)."""
    data = _plain(mapping)
    doc = SourceDoc(name, data)
    stack: list[tuple[Path, Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        doc.positions[path] = (0, 0)
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    doc.error((0, 0), f"key {key!r} is not a string", "use string keys",
                              "key-type", path=path)
                    continue
                doc.key_positions[path + (key,)] = (0, 0)
                stack.append((path + (key,), item))
        elif isinstance(value, list):
            stack.extend((path + (i,), item) for i, item in enumerate(value))
    return doc


class _Loader:
    """Collects the layers of one rules source, following `extends:`."""

    def __init__(self, assembly: Assembly) -> None:
        self.assembly = assembly
        self.result = Analysis("")
        self.done: set[str] = set()
        self.stack: list[str] = []  # identities of the files being expanded
        self.names: list[str] = []  # their names as shown to the user

    def validate(self, doc: SourceDoc) -> bool:
        ok = check_root(doc)
        if ok:
            doc.findings.extend(schema_findings(doc, self.assembly.schema))
        self.result.findings.extend(doc.findings)
        return ok and not doc.has_errors

    def add(self, doc: SourceDoc, ident: str, base_dir: str) -> None:
        """Validate `doc`, add its `extends:` layers, then the doc itself."""
        if not self.validate(doc):
            return
        self.stack.append(ident)
        self.names.append(doc.name)
        for i, entry in enumerate(doc.data.get("extends") or []):
            self.extend(doc, i, entry, base_dir)
        self.stack.pop()
        self.names.pop()
        self.done.add(ident)
        self.result.layers.append(doc)

    def extend(self, doc: SourceDoc, i: int, entry: str, base_dir: str) -> None:
        where = doc.positions.get(("extends", i), (1, 1))
        if entry.startswith(BUILTIN):
            found = _builtin_source(entry[len(BUILTIN):])
            if found is None:
                names = ", ".join(builtin_names())
                doc.error(where, f"unknown bundled pack {entry!r}", f"bundled packs: {names}",
                          "extends", path=("extends", i))
                self.result.findings.append(doc.findings[-1])
                return
            ident, text, child_dir, name = found[0], found[1], base_dir, entry
        else:
            ident = os.path.realpath(os.path.join(base_dir, entry))
            name = os.path.relpath(ident) if not os.path.isabs(entry) else entry
            child_dir = os.path.dirname(ident)
            raw, read_doc = read_path(ident)
            text = None
            if raw is not None:
                text, read_doc = decode(raw, name)
            if text is None:
                reason = read_doc.findings[0].message if read_doc.findings else "unreadable"
                doc.error(where, f"cannot extend {entry!r}: {reason}", "check the path (it is "
                          "relative to this file)", "extends", path=("extends", i))
                self.result.findings.append(doc.findings[-1])
                return
        if ident in self.stack:
            start = self.stack.index(ident)
            chain = " -> ".join([*self.names[start:], self.names[start]])
            doc.error(where, f"extends cycle: {chain}", "remove one of the extends entries",
                      "extends-cycle", path=("extends", i))
            self.result.findings.append(doc.findings[-1])
            return
        if ident in self.done:
            return
        if len(self.stack) >= MAX_EXTENDS_DEPTH:
            doc.error(where, f"extends chain deeper than {MAX_EXTENDS_DEPTH} files", "",
                      "extends", path=("extends", i))
            self.result.findings.append(doc.findings[-1])
            return
        self.add(parse_text(text, name), ident, child_dir)

    def run(self, top: SourceDoc, ident: str, base_dir: str) -> Analysis:
        self.result.source = top.name
        base = _builtin_source(BASE[len(BUILTIN):])
        if base is not None and base[0] != ident:
            self.add(parse_text(base[1], BASE), base[0], base_dir)
        self.add(top, ident, base_dir)
        if self.result.errors or not self.result.layers or self.result.layers[-1] is not top:
            return self.result
        data: dict[str, Any] = {}
        for layer in self.result.layers:
            data = deep_merge(data, {k: v for k, v in layer.data.items() if k != "extends"})
        self.result.data = data
        self.result.findings.extend(load_checks(data, self.result.index, self.assembly))
        return self.result


def analyze_doc(doc: SourceDoc, ident: str, base_dir: str,
                assembly: Assembly | None = None) -> Analysis:
    """Load a parsed source with its layers; nothing is raised."""
    return _Loader(assembly or default_assembly()).run(doc, ident, base_dir)


def analyze_bytes(raw: bytes, name: str, base_dir: str | None = None,
                  assembly: Assembly | None = None) -> Analysis:
    text, doc = decode(raw, name)
    if text is None:
        return Analysis(name, findings=list(doc.findings))
    return analyze_text(text, name, base_dir, assembly)


def analyze_text(text: str, name: str = "<string>", base_dir: str | None = None,
                 assembly: Assembly | None = None) -> Analysis:
    base = base_dir if base_dir is not None else os.getcwd()
    return analyze_doc(parse_text(text, name), f"text:{name}", base, assembly)


def analyze_path(path: str | os.PathLike[str], assembly: Assembly | None = None) -> Analysis:
    name = os.fspath(path)
    raw, doc = read_path(name)
    if raw is None:
        return Analysis(name, findings=list(doc.findings), unreadable=True)
    text, doc = decode(raw, name)
    if text is None:
        return Analysis(name, findings=list(doc.findings))
    real = os.path.realpath(name)
    return analyze_doc(parse_text(text, name), real, os.path.dirname(real), assembly)


def analyze_builtin(name: str, assembly: Assembly | None = None) -> Analysis:
    """Load a bundled pack by its `builtin:NAME` name."""
    found = _builtin_source(name[len(BUILTIN):]) if name.startswith(BUILTIN) else None
    if found is None:
        finding = Finding(name, 1, 1, "error", f"unknown bundled pack {name!r}",
                          f"bundled packs: {', '.join(builtin_names())}", "unreadable")
        return Analysis(name, findings=[finding], unreadable=True)
    return analyze_doc(parse_text(found[1], name), found[0], os.path.dirname(found[0]), assembly)


def analyze_mapping(mapping: Mapping[str, Any], name: str = "<mapping>",
                    assembly: Assembly | None = None) -> Analysis:
    if not isinstance(mapping, Mapping):
        doc = SourceDoc(name, mapping, positions={(): (0, 0)})
        check_root(doc)
        return Analysis(name, findings=list(doc.findings))
    return analyze_doc(_mapping_doc(mapping, name), f"mapping:{name}", os.getcwd(), assembly)


def _document(result: Analysis) -> RulesDocument:
    if result.errors or result.data is None:
        raise RulesError(result.errors or [Finding(result.source, 1, 1, "error",
                                                   "the rules could not be loaded")])
    warnings = [f for f in result.findings if f.level != "error"]
    return RulesDocument(result.data, warnings, result.source, tuple(result.layers))


def load_rules_path(path: str | os.PathLike[str]) -> RulesDocument:
    """Load a rules file (YAML, or OpenClaw JSON5) with its `extends:` layers."""
    return _document(analyze_path(path))


def load_rules_text(text: str, name: str = "<string>") -> RulesDocument:
    """Load rules from text; relative `extends:` entries resolve from the working directory."""
    return _document(analyze_text(text, name))


def load_rules_mapping(mapping: Mapping[str, Any], name: str = "<mapping>") -> RulesDocument:
    """Load rules from a mapping with the keys of a rules file."""
    return _document(analyze_mapping(mapping, name))


__all__ = ["Analysis", "RulesDocument", "analyze_builtin", "analyze_bytes", "analyze_mapping", "analyze_path",
           "analyze_text", "builtin_names", "load_rules_mapping", "load_rules_path",
           "load_rules_text"]
