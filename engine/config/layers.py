"""Loading rules: read a source, follow its layers, merge them, run the checks that block loading.

`analyze(source, kind)` loads one of the `KINDS` of source and never raises: lint uses it to show
everything, and to tell an unreadable file (exit 2) from an invalid one; `load` raises
`RulesError` instead. What reading refuses, which texts are JSON5 and the order of the layers:
docs/rules.md, "Layers", "YAML details" and "The OpenClaw block". Each layer is checked on its
own (`version` first, then the schema), so findings point into the file that wrote them; then
the layers merge and the merged rules get the `BLOCKING` checks (modules of `lint.checks`).

`trace` credits each leaf of an agent's effective rules to the `file:line` of the last layer
whose data holds its path, so no merge is replayed (`loopguard config`).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from loopguard.config.json5 import parse_text
from loopguard.config.schema import (
    Assembly,
    default_assembly,
    describe,
    prune_invalid,
    schema_findings,
)
from loopguard.config.source import (
    Path,
    Repair,
    RulesDocument,
    SourceDoc,
    copy_tree,
    deep_merge,
    effective_config,
    mapping_doc,
)
from loopguard.detection.detector import option_defaults
from loopguard.errors import RulesError
from loopguard.findings import Finding, codes
from loopguard.lint.checks import discover
from loopguard.lint.checks.context import LintContext, scopes
from loopguard.text.hints import is_int

MAX_BYTES = 1024 * 1024
BUILTIN = "builtin:"
BASE = "builtin:default"
DEFAULTS = "options schema"  # the layer of every detector's option defaults, below BASE
SUPPORTED_VERSION = 1
MAX_EXTENDS_DEPTH = 32
RECOVERABLE = ("duplicate-key",)  # parse errors after which the document is still whole
# the kinds of source `analyze` reads, each with the name it goes by when none is given
KINDS = {"path": "", "bytes": "<bytes>", "text": "<string>", "mapping": "<mapping>"}
# the checks that block loading, found as lint finds them: a scope's errors are listed together,
# then those of the checks that judge the whole rules at once (`WHOLE_RULES`)
BLOCKING = tuple(m for m in discover() if getattr(m, "BLOCKS_LOAD", False))
BY_SCOPE = tuple(m for m in BLOCKING if not getattr(m, "WHOLE_RULES", False))
REPAIRED = "repaired"
_PACK_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_ALLOW = "to allow it, pass --allow-extends-outside (CLI) or allow_extends_outside=True"
_DECODE_PROBLEMS = {"too-large": "too large", "encoding": "not UTF-8 text", "binary": "binary data"}


CODES = codes(  # the codes raised here (the table's form: `findings.codes`)
    """
unreadable error read
    The file cannot be read (missing, a directory, no permission) or `builtin:NAME` names no
    bundled pack.

    Fails: `loopguard lint missing.yaml`.
too-large error read
    The file is larger than a rules file can be (1 MiB).

    Fails: a 5 MiB log passed by mistake.
encoding error read
    The file is not UTF-8 (UTF-16, or invalid bytes).

    Fails: a file saved as UTF-16 by an editor.
binary error read
    The file holds a NUL byte: binary data, not text.

    Fails: a gzipped file.
empty error root
    An empty file, list or string where something is needed.

    Fails: a file with only comments; `exempt: []` where a list must not be empty.
not-a-mapping error root
    The document is not a mapping of keys to values.

    Fails: `- version: 1`.
version error root
    `version` is missing, not 1, or newer than this loopguard.

    Fails: `version: 2`.
extends error extends
    An `extends:` entry that cannot be loaded (unknown pack, missing file, too deep).

    Fails: `extends: [builtin:nope]`.
extends-cycle error extends
    `extends:` entries that include each other.

    Fails: a.yaml extends b.yaml, which extends a.yaml.
store-path error extends
    `store.path` outside the rules file's folder tree (absolute, `~`, `../`, or a symbolic
    link out), confined like `extends:` (`--allow-extends-outside` allows both).

    Fails: `store: {path: ../../elsewhere/state.db}`.
"""
)


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


# -- reading ----------------------------------------------------------------------------------


def _byte_pos(raw: bytes, index: int) -> tuple[int, int]:
    line_start = raw.rfind(b"\n", 0, index) + 1
    col = len(raw[line_start:index].decode("utf-8", errors="replace")) + 1
    return raw.count(b"\n", 0, index) + 1, col


def decode(raw: bytes, name: str) -> tuple[str | None, SourceDoc]:
    """The text of `raw`, or None with the reason in the returned doc's findings."""
    doc = SourceDoc(name)
    if len(raw) > MAX_BYTES:
        size, limit = len(raw) / 1048576, MAX_BYTES // 1048576
        message = f"file is too large ({size:.1f} MiB); rules files are limited to {limit} MiB"
        hint = "a rules file is a few kilobytes; is this the right file?"
        doc.error((1, 1), message, hint, "too-large")
    elif raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        doc.error((1, 1), "file is UTF-16, not UTF-8", "save it as UTF-8", "encoding")
    elif (nul := raw.find(b"\x00")) >= 0:
        message = "binary data (a NUL byte), not a text file"
        hint = "a rules file is UTF-8 YAML or JSON5 text"
        doc.error(_byte_pos(raw, nul), message, hint, "binary")
    else:
        try:
            return raw.decode("utf-8-sig"), doc
        except UnicodeDecodeError as exc:
            message = f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})"
            doc.error(_byte_pos(raw, exc.start), message, "save the file as UTF-8", "encoding")
    return None, doc


_DIRECTORY = ("is a directory, not a rules file", "name a .yaml file")


def read_file(name: str) -> tuple[bytes | None, str, str]:
    """The bytes of a regular file (at most MAX_BYTES + 1), or None with the problem and a hint.

    The file is opened without blocking and checked with `fstat` before reading: a
    FIFO, device or socket would block loading forever (or read without end).
    """
    if "\x00" in name:
        return None, "the path contains a NUL character", "check the path"
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        return None, "file not found", "check the path"
    except IsADirectoryError:
        return None, *_DIRECTORY
    except (OSError, ValueError) as exc:
        return None, f"cannot read the file: {getattr(exc, 'strerror', None) or exc}", ""
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            return None, *_DIRECTORY
        if not stat.S_ISREG(mode):
            hint = "rules are read from regular files; `loopguard lint -` reads standard input"
            return None, "not a regular file (a FIFO, device or socket)", hint
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(MAX_BYTES + 1), "", ""
    except OSError as exc:
        return None, f"cannot read the file: {exc.strerror or exc}", ""
    finally:
        os.close(fd)


def _unknown_pack(name: str) -> tuple[str, str]:
    return f"unknown bundled pack {name!r}", f"bundled packs: {', '.join(builtin_names())}"


def _unreadable(name: str, message: str, hint: str) -> Analysis:
    finding = Finding(name, 1, 1, "error", message, "", hint, "unreadable")
    return Analysis(name, findings=[finding], unreadable=True)


def builtin_names() -> list[str]:
    """The bundled packs, as `builtin:NAME` names."""
    folder = resources.files("loopguard.rules")
    return sorted(BUILTIN + p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


@lru_cache(maxsize=16)
def builtin_source(name: str) -> tuple[str, str] | None:
    """(identity, text) of a bundled pack, or None when there is no such pack."""
    if not _PACK_NAME.match(name):
        return None
    item = resources.files("loopguard.rules").joinpath(f"{name}.yaml")
    if not item.is_file():
        return None
    return os.path.realpath(str(item)), item.read_text(encoding="utf-8")


def _read(
    source: Any, kind: str, name: str, base_dir: str | None
) -> tuple[SourceDoc, str, str] | Analysis:
    """The parsed doc, its identity and the folder its `extends:` paths resolve from; or, when
    there is nothing to load, the Analysis that says why. A path is read, bytes decoded, text
    parsed."""
    if kind == "mapping":
        if not isinstance(source, Mapping):
            doc = SourceDoc(name, source, positions={(): (0, 0)})
            check_root(doc)
            return Analysis(name, findings=list(doc.findings))
        base_dir = base_dir if base_dir is not None else os.getcwd()
        return mapping_doc(source, name), f"mapping:{name}", base_dir
    if kind == "path" and name.startswith(BUILTIN):
        found = builtin_source(name[len(BUILTIN) :])
        if found is None:
            return _unreadable(name, *_unknown_pack(name))
        return parse_text(found[1], name), found[0], os.path.dirname(found[0])
    ident = f"text:{name}"
    if kind == "path":
        source, problem, hint = read_file(name)
        if source is None:
            return _unreadable(name, problem, hint)
        ident = os.path.realpath(name)
        base_dir = os.path.dirname(ident)
    if kind != "text":
        source, doc = decode(source, name)
        if source is None:
            return Analysis(name, findings=list(doc.findings))
    return parse_text(source, name), ident, base_dir if base_dir is not None else os.getcwd()


# -- the layers -------------------------------------------------------------------------------


def check_root(doc: SourceDoc) -> bool:
    """Is the document a mapping with `version: 1`? (Checked before anything else; parse
    errors that are `RECOVERABLE` leave the document whole and do not stop it.)"""
    data = doc.data
    if data is None:
        if not doc.has_errors:
            doc.error((1, 1), "the rules file is empty", "start it with `version: 1`", "empty")
        return False
    if any(f.level == "error" and f.code not in RECOVERABLE for f in doc.findings):
        return False
    root = doc.positions.get((), (1, 1))
    if not isinstance(data, dict):
        message = f"a rules file must be a mapping of keys to values, not {describe(data, False)}"
        doc.error(root, message, "start it with `version: 1`", "not-a-mapping")
        return False
    if "version" not in data:
        doc.error(root, "missing `version`", "add `version: 1` as the first line", "version")
        return False
    version = data["version"]
    if is_int(version) and version > SUPPORTED_VERSION:
        message = f"rules version {version} is newer than this loopguard understands "
        message += f"(version {SUPPORTED_VERSION})"
        hint = "upgrade loopguard-engine, or write `version: 1` rules"
    elif type(version) is not int or version != SUPPORTED_VERSION:  # not 1.0, not true
        shown = repr(version) if isinstance(version, (int, float)) else describe(version, False)
        message, hint = f"unsupported rules version {shown}", "write `version: 1`"
    else:
        return True
    doc.error(doc.positions.get(("version",), root), message, hint, "version", path=("version",))
    return False


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # another drive, or a mix of absolute and relative paths
        return False


class _Refused(Exception):
    """An `extends:` entry that cannot be followed: the error's message, hint (and code)."""


class LayerLoader:
    """Collects the layers of one rules source, following `extends:`."""

    def __init__(self, assembly: Assembly, allow_outside: bool = False) -> None:
        self.assembly = assembly
        self.allow_outside = allow_outside
        self.root = ""  # the folder tree `extends:` paths must stay in (set by `run`)
        self.result = Analysis("")
        self.done: set[str] = set()
        self.open: dict[str, str] = {}  # identity -> shown name of the files being expanded
        self.incomplete = False  # a layer could not be used at all, or an extends entry read

    def refuse(
        self, doc: SourceDoc, path: Path, message: str, hint: str, code: str = "extends"
    ) -> None:
        """An error at `path` of `doc`, recorded in the result too."""
        doc.error(doc.positions.get(path, (1, 1)), message, hint, code, path=path)
        self.result.findings.append(doc.findings[-1])

    def add(self, doc: SourceDoc, ident: str, base_dir: str) -> None:
        """Check `doc`, then add its `extends:` layers and the doc itself, without the values its
        schema rejects (`schema.prune_invalid`).

        A duplicate key is an error, but the document is still whole (the last value
        kept), so the later checks run on it too.
        """
        ok = check_root(doc)
        if ok:
            doc.findings.extend(schema_findings(doc, self.assembly.schema))
        self.result.findings.extend(doc.findings)
        checked = prune_invalid(doc, self.assembly.schema) if ok and doc.has_errors else doc
        if not ok or checked is None:
            self.incomplete = True
            return
        self.check_store_path(checked)
        self.open[ident] = checked.name
        for i, entry in enumerate(checked.data.get("extends") or []):
            self.extend(checked, i, entry, base_dir)
        self.open.popitem()
        self.done.add(ident)
        self.result.layers.append(checked)

    def extend(self, doc: SourceDoc, i: int, entry: str, base_dir: str) -> None:
        """Add the layers `extends:` entry `i` of `doc` names; a problem is an error at it."""
        try:
            ident, name, text = self.read_extended(entry, base_dir)
            if ident in self.open:
                names = list(self.open.values())[list(self.open).index(ident) :]
                chain = " -> ".join([*names, names[0]])
                hint = "remove one of the extends entries"
                raise _Refused(f"extends cycle: {chain}", hint, "extends-cycle")
            if ident in self.done:
                return
            if len(self.open) >= MAX_EXTENDS_DEPTH:
                raise _Refused(f"extends chain deeper than {MAX_EXTENDS_DEPTH} files", "")
            child = parse_text(text, name)
            rules = isinstance(child.data, dict) and "version" in child.data
            if not entry.startswith(BUILTIN) and not rules:
                # Not a rules file (a `.env`, a key file...): say so without quoting any of it.
                where = next(((f.line, f.col) for f in child.findings if f.level == "error"), None)
                at = f" (first problem at line {where[0]}, column {where[1]})" if where else ""
                hint = "an extends entry names a YAML or JSON5 rules file with `version: 1`; "
                hint += "run `loopguard lint` on it to see more"
                raise _Refused(f"cannot extend {entry!r}: not a rules file{at}", hint)
        except _Refused as refused:
            self.refuse(doc, ("extends", i), *refused.args)
            self.incomplete = True  # a missing layer
            return
        self.add(child, ident, os.path.dirname(ident))

    def read_extended(self, entry: str, base_dir: str) -> tuple[str, str, str]:
        """(identity, shown name, text) of an `extends:` entry, or `_Refused`.

        A file's path must stay inside `self.root` (unless allowed); a file that cannot be read
        or decoded is reported by the kind of problem only, never by its content.
        """
        if entry.startswith(BUILTIN):
            found = builtin_source(entry[len(BUILTIN) :])
            if found is None:
                raise _Refused(*_unknown_pack(entry))
            return found[0], entry, found[1]
        if "\x00" in entry:
            raise _Refused("extends entry contains a NUL character", "check the path")
        try:
            ident = os.path.realpath(os.path.join(base_dir, entry))
        except (OSError, ValueError) as exc:
            raise _Refused(f"cannot extend {entry!r}: {exc}", "check the path") from None
        if not self.allow_outside and not _inside(ident, self.root):
            message = f"extends {entry!r} points outside the rules file's folder ({self.root})"
            hint = f"keep extended files under that folder or use builtin:NAME; {_ALLOW}"
            hint += " (Guard.from_file/from_yaml/from_dict)"
            raise _Refused(message, hint)
        name = os.path.relpath(ident) if not os.path.isabs(entry) else entry
        raw, reason, _ = read_file(ident)
        text, read = decode(raw, name) if raw is not None else (None, None)
        if text is None:  # said by the kind of problem only
            if read is not None:
                reason = f"not a rules file ({_DECODE_PROBLEMS[read.findings[0].code]})"
            hint = "check the path (it is relative to this file)"
            raise _Refused(f"cannot extend {entry!r}: {reason}", hint)
        return ident, name, text

    def check_store_path(self, doc: SourceDoc) -> None:
        """`store.path` (a SQLite file loading creates, with its -wal and -shm) is confined like
        `extends:`: resolved as the store resolves it (relative to the top rules file's folder,
        `~` expanded), it must stay inside that folder tree unless outside paths are allowed."""
        store = doc.data.get("store")
        path = store.get("path") if isinstance(store, dict) else None
        if not isinstance(path, str) or self.allow_outside:
            return
        shown = repr(path[:200])
        try:
            resolved = os.path.realpath(os.path.join(self.root, os.path.expanduser(path)))
        except (OSError, ValueError) as exc:  # a NUL character, ...
            problem = f"store.path {shown} cannot be used: {exc}"
        else:
            if _inside(resolved, self.root):
                return
            problem = f"store.path {shown} points outside the rules file's folder ({self.root})"
        hint = "keep the database under that folder, or pass a store to the Guard "
        hint += f"(Guard(..., store=SqliteStore(path))); {_ALLOW}"
        self.refuse(doc, ("store", "path"), problem, hint, "store-path")

    def run(self, top: SourceDoc, ident: str, base_dir: str) -> Analysis:
        self.result.source = top.name
        self.root = os.path.realpath(base_dir)
        # The option defaults of every detector the schema knows, as a layer of their own below
        # BASE: a detector's options schema is the one place they are written.
        block = self.assembly.schema["properties"]["detectors"]["properties"]
        defaults = {d: option_defaults(block[d]) for d in self.assembly.detector_ids}
        self.result.layers.append(SourceDoc(DEFAULTS, {"detectors": defaults}))
        base = builtin_source(BASE[len(BUILTIN) :])
        if base is not None and base[0] != ident:
            self.add(parse_text(base[1], BASE), base[0], base_dir)
        self.add(top, ident, base_dir)
        if self.incomplete:
            return self.result  # later checks would judge an incomplete merge
        data: dict[str, Any] = {}
        for layer in self.result.layers[1:]:
            data = deep_merge(data, {k: v for k, v in layer.data.items() if k != "extends"})
        # the defaults go under the merge, keeping the order the files wrote their keys in (a
        # detector's written options first, then the defaults it did not write)
        detectors = data.setdefault("detectors", {})  # a mapping: each layer passed the schema
        for name, options in defaults.items():
            written = detectors.setdefault(name, {})
            for key, value in options.items() if isinstance(written, dict) else ():
                written.setdefault(key, copy_tree(value))
        self.result.data = data
        return self.result


# -- the front door ---------------------------------------------------------------------------


def analyze(
    source: Any,
    kind: str = "path",
    name: str | None = None,
    base_dir: str | None = None,
    assembly: Assembly | None = None,
    allow_extends_outside: bool = False,
) -> Analysis:
    """Load `source`, one of the `KINDS`, with its layers; nothing is raised.

    A path's `extends:` entries resolve from its folder; those of bytes, text and a mapping
    from `base_dir` (default: the working directory). They must stay inside that folder's
    tree (symbolic links followed) unless `allow_extends_outside`; `builtin:NAME` packs are
    always allowed. A mapping has no positions: its findings are at line and column 0.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    name = os.fspath(source) if kind == "path" else name or KINDS[kind]
    read = _read(source, kind, name, base_dir)
    if isinstance(read, Analysis):
        return read
    assembly = assembly or default_assembly()
    result = LayerLoader(assembly, allow_extends_outside).run(*read)
    if result.data is not None:  # the `BLOCKING` checks: those `BY_SCOPE` scope by scope
        ctx = LintContext(result.data, tuple(result.layers), assembly=assembly)
        result.findings.extend(
            finding
            for prefix, _ in scopes(result.data)
            for module in BY_SCOPE
            for finding in module.check(replace(ctx, scope=prefix))
        )
        result.findings.extend(f for m in BLOCKING if m not in BY_SCOPE for f in m.check(ctx))
    return result


def to_document(result: Analysis) -> RulesDocument:
    """The `RulesDocument` of an analysis without errors (its warnings kept), else `RulesError`
    with every error."""
    if result.errors or result.data is None:
        unknown = Finding(result.source, 1, 1, "error", "the rules could not be loaded")
        raise RulesError(result.errors or [unknown])
    warnings = [f for f in result.findings if f.level != "error"]
    return RulesDocument(result.data, warnings, result.source, tuple(result.layers))


def load(
    source: Any, kind: str = "path", name: str | None = None, allow_extends_outside: bool = False
) -> RulesDocument:
    """`to_document(analyze(...))`: the loaded rules (YAML, or OpenClaw JSON5), or `RulesError`.

    A `builtin:NAME` path loads a bundled pack, so `replay --rules builtin:portfolio` and
    `Guard.from_file("builtin:portfolio")` work. Lint-only checks do not run here.
    """
    return to_document(analyze(source, kind, name, allow_extends_outside=allow_extends_outside))


# -- where each value came from ---------------------------------------------------------------


@dataclass(frozen=True)
class Effective:
    """One agent's effective rules, where each leaf came from, and the repairs made."""

    config: dict[str, Any]
    sources: dict[Path, str]  # leaf path -> "file:line", "builtin:NAME:line" or "repaired"
    repairs: list[tuple[Repair, str]]  # each repair with where the replaced value was written


def _holds(data: Any, path: Path) -> bool:
    for step in path:
        if isinstance(data, dict) and step in data:
            data = data[step]
        elif isinstance(data, list) and isinstance(step, int) and 0 <= step < len(data):
            data = data[step]
        else:
            return False
    return True


def is_leaf(value: Any) -> bool:
    """Scalars, empty mappings and lists of scalars are shown (and credited) whole."""
    if isinstance(value, dict):
        return not value
    if isinstance(value, list):
        return not any(isinstance(item, (dict, list)) for item in value)
    return True


def leaves(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every leaf of a rules value with its path, in document order."""
    if is_leaf(value):
        yield path, value
    else:
        for key, item in value.items() if isinstance(value, dict) else enumerate(value):
            yield from leaves(item, path + (key,))


def _writer(layers: Sequence[SourceDoc], path: Path) -> str | None:
    """`name:line` of the last layer whose data holds `path`: of its key (a block list starts a
    line below it), else of the value, else of its nearest positioned ancestor (aliases, `<<`
    merges; the root always is)."""
    for layer in reversed(layers) if path[:1] != ("extends",) else ():
        if not _holds(layer.data, path):
            continue
        if not layer.positions:  # a layer no file wrote (the options schemas' defaults)
            return layer.name
        if path in layer.key_positions:
            return f"{layer.name}:{layer.key_positions[path][0]}"
        cut = next(cut for cut in range(len(path), -1, -1) if path[:cut] in layer.positions)
        return f"{layer.name}:{layer.positions[path[:cut]][0]}"
    return None


def trace(
    layers: Sequence[SourceDoc], data: Mapping[str, Any], agent: str | None = None
) -> Effective:
    """The effective rules of `agent` over the merged `data` of `layers`, with sources (the
    agent's block first), the values the threshold repair changed marked `repaired`."""
    config, repairs = effective_config(data, agent)
    sources: dict[Path, str] = {}
    for path, _value in leaves(config):
        found = _writer(layers, ("agents", agent) + path) if agent is not None else None
        sources[path] = found or _writer(layers, path) or "unknown"
    replaced = []
    for repair in repairs:
        path = tuple(repair.field.split("."))
        replaced.append((repair, sources.get(path, "unknown")))
        sources[path] = REPAIRED
    return Effective(config, sources, replaced)
