"""Reading a rules source and its layers.

Bytes or text of a rules file -> a native `SourceDoc`, whatever the syntax.

Reading refuses what is not a rules file before any parser sees it: files
over `MAX_BYTES` (1 MiB), binary data (a NUL byte), text that is not UTF-8
(a UTF-8 byte-order mark is accepted). Then the syntax is chosen: `.json5` /
`.json` files and texts that start with `{` or a `//` comment are read as
JSON5 (falling back to YAML when only YAML parses), everything else as YAML.
An OpenClaw-shaped document (`tools.loopDetection`, `agents.list`) is
translated into native keys, and so is such a block inside a native mapping
(merged with its native keys); see `config.json5`.

The layers of a rules source: the detectors' option defaults (`DEFAULTS`, read from their
options schemas), `builtin:default`, then `extends:` entries, then the file.

Each `extends:` entry is `builtin:NAME` (`rules/NAME.yaml` of the installed
package) or a path relative to the including file, and is expanded the same
way (its own `extends:` first). A layer met twice is applied once; a cycle is
an error naming the chain. Every layer is checked on its own (`version`
first, then the schema), so findings point into the file that wrote them;
then the layers merge (mappings key by key, lists and scalars replace). The
checks that judge the merged document are run by `config.load`.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from loopguard.config.json5 import (
    is_openclaw,
    load_json5,
    looks_like_json5,
    merge_embedded,
    progress,
    translate,
)
from loopguard.config.schema import (
    Assembly,
    default_assembly,
    kind_of,
    prune_invalid,
    schema_findings,
)
from loopguard.config.source import (
    PositionIndex,
    SourceDoc,
    check_text,
    check_values,
    copy_tree,
    deep_merge,
    load_yaml,
)
from loopguard.detection.detector import option_defaults
from loopguard.findings import Finding, codes
from loopguard.text.hints import is_int

MAX_BYTES = 1024 * 1024


# The codes raised here: `code level stage` and what it means, as `lint --list-checks`
# and docs/rules.md document them
CODES = codes(
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
"""
)


def _byte_pos(raw: bytes, index: int) -> tuple[int, int]:
    line_start = raw.rfind(b"\n", 0, index) + 1
    col = len(raw[line_start:index].decode("utf-8", errors="replace")) + 1
    return raw.count(b"\n", 0, index) + 1, col


def decode(raw: bytes, name: str) -> tuple[str | None, SourceDoc]:
    """The text of `raw`, or None with the reason in the returned doc's findings."""
    doc = SourceDoc(name)
    if len(raw) > MAX_BYTES:
        doc.error(
            (1, 1),
            f"file is too large ({len(raw) / 1048576:.1f} MiB); rules files are "
            f"limited to {MAX_BYTES // 1048576} MiB",
            "a rules file is a few kilobytes; is this the right file?",
            "too-large",
        )
        return None, doc
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        doc.error((1, 1), "file is UTF-16, not UTF-8", "save it as UTF-8", "encoding")
        return None, doc
    nul = raw.find(b"\x00")
    if nul >= 0:
        doc.error(
            _byte_pos(raw, nul),
            "binary data (a NUL byte), not a text file",
            "a rules file is UTF-8 YAML or JSON5 text",
            "binary",
        )
        return None, doc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        doc.error(
            _byte_pos(raw, exc.start),
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})",
            "save the file as UTF-8",
            "encoding",
        )
        return None, doc
    return text, doc


def read_path(path: str | os.PathLike[str]) -> tuple[bytes | None, SourceDoc]:
    """The bytes of a regular file (at most MAX_BYTES + 1), or None with an `unreadable` finding.

    The file is opened without blocking and checked with `fstat` before reading: a
    FIFO, device or socket would block loading forever (or read without end).
    """
    name = os.fspath(path)
    doc = SourceDoc(name)
    if "\x00" in name:
        doc.error((1, 1), "the path contains a NUL character", "check the path", "unreadable")
        return None, doc
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        doc.error((1, 1), "file not found", "check the path", "unreadable")
        return None, doc
    except IsADirectoryError:
        doc.error((1, 1), "is a directory, not a rules file", "name a .yaml file", "unreadable")
        return None, doc
    except (OSError, ValueError) as exc:
        doc.error(
            (1, 1),
            f"cannot read the file: {getattr(exc, 'strerror', None) or exc}",
            "",
            "unreadable",
        )
        return None, doc
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            doc.error((1, 1), "is a directory, not a rules file", "name a .yaml file", "unreadable")
            return None, doc
        if not stat.S_ISREG(mode):
            doc.error(
                (1, 1),
                "not a regular file (a FIFO, device or socket)",
                "rules are read from regular files; `loopguard lint -` reads standard input",
                "unreadable",
            )
            return None, doc
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(MAX_BYTES + 1), doc
    except OSError as exc:
        doc.error((1, 1), f"cannot read the file: {exc.strerror or exc}", "", "unreadable")
        return None, doc
    finally:
        os.close(fd)


def _native_from_json5(doc: SourceDoc) -> SourceDoc:
    blocks: list[Any] = doc.data
    if doc.has_errors or not blocks:
        doc.data = None
        return doc
    if len(blocks) > 1 or is_openclaw(blocks[0]):
        if all(is_openclaw(b) for b in blocks):
            return translate(doc, [((i,), b) for i, b in enumerate(blocks)])
        second = doc.positions.get((1,), (1, 1))
        doc.error(
            second,
            "more than one top-level value",
            "only OpenClaw blocks ({ tools: ... } / { agents: ... }) may follow each other",
            "multiple-documents",
        )
        doc.data = None
        return doc
    native = SourceDoc(doc.name, blocks[0], findings=doc.findings)
    native.positions = {p[1:]: v for p, v in doc.positions.items()}
    native.key_positions = {p[1:]: v for p, v in doc.key_positions.items()}
    return merge_embedded(native)


def _native_from_yaml(doc: SourceDoc) -> SourceDoc:
    if doc.has_errors:
        return doc
    if is_openclaw(doc.data):
        return translate(doc, [((), doc.data)])
    return merge_embedded(doc)


def parse_text(text: str, name: str) -> SourceDoc:
    """Parse YAML or JSON5 rules text into native keys (problems in `findings`).

    Text with a lone surrogate is refused before parsing; parsed values are then
    checked by `source.check_values` (integer range, surrogates from escapes).
    """
    doc = SourceDoc(name)
    if not check_text(text, doc):
        return doc
    doc = _parse(text, name)
    if doc.data is not None:
        check_values(doc)
    return doc


def _parse(text: str, name: str) -> SourceDoc:
    if name.lower().endswith((".json5", ".json")):
        return _native_from_json5(load_json5(text, name))
    if looks_like_json5(text):
        as_json5 = load_json5(text, name)
        if not as_json5.has_errors:
            return _native_from_json5(as_json5)
        as_yaml = load_yaml(text, name)
        if as_yaml.has_errors and progress(as_json5) >= progress(as_yaml):
            return _native_from_json5(as_json5)
        return _native_from_yaml(as_yaml)
    return _native_from_yaml(load_yaml(text, name))


BUILTIN = "builtin:"
BASE = "builtin:default"
DEFAULTS = "options schema"  # the layer of every detector's option defaults, below BASE
SUPPORTED_VERSION = 1
MAX_EXTENDS_DEPTH = 32
_PACK_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


# The codes raised here: `code level stage` and what it means, as `lint --list-checks`
# and docs/rules.md document them
CODES += codes(
    """
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

    @property
    def index(self) -> PositionIndex:
        return PositionIndex(self.layers)


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


def check_root(doc: SourceDoc, recoverable: Collection[str] = ()) -> bool:
    """Is the document a mapping with `version: 1`? (Checked before anything else; parse
    errors whose code is in `recoverable` leave the document whole and do not stop it.)"""
    data = doc.data
    if data is None:
        if not doc.has_errors:
            doc.error((1, 1), "the rules file is empty", "start it with `version: 1`", "empty")
        return False
    if any(f.level == "error" and f.code not in recoverable for f in doc.findings):
        return False
    root = doc.positions.get((), (1, 1))
    if not isinstance(data, dict):
        doc.error(
            root,
            f"a rules file must be a mapping of keys to values, not {kind_of(data)}",
            "start it with `version: 1`",
            "not-a-mapping",
        )
        return False
    if "version" not in data:
        doc.error(root, "missing `version`", "add `version: 1` as the first line", "version")
        return False
    version = data["version"]
    where = doc.positions.get(("version",), root)
    if is_int(version) and version > SUPPORTED_VERSION:
        doc.error(
            where,
            f"rules version {version} is newer than this loopguard understands "
            f"(version {SUPPORTED_VERSION})",
            "upgrade loopguard-engine, or write `version: 1` rules",
            "version",
            path=("version",),
        )
        return False
    if type(version) is not int or version != SUPPORTED_VERSION:  # not 1.0, not true
        shown = repr(version) if isinstance(version, (int, float)) else kind_of(version)
        doc.error(
            where,
            f"unsupported rules version {shown}",
            "write `version: 1`",
            "version",
            path=("version",),
        )
        return False
    return True


RECOVERABLE = ("duplicate-key",)  # parse errors after which the document is still whole


class LayerLoader:
    """Collects the layers of one rules source, following `extends:`."""

    def __init__(self, assembly: Assembly, allow_outside: bool = False) -> None:
        self.assembly = assembly
        self.allow_outside = allow_outside
        self.root = ""  # the folder tree `extends:` paths must stay in (set by `run`)
        self.result = Analysis("")
        self.done: set[str] = set()
        self.stack: list[str] = []  # identities of the files being expanded
        self.names: list[str] = []  # their names as shown to the user
        self.incomplete = False  # a layer could not be used at all

    def validate(self, doc: SourceDoc) -> SourceDoc | None:
        """`doc` if valid; without the values its schema rejects (`schema.prune_invalid`); None
        if unusable.

        A duplicate key is an error, but the document is still whole (the last value
        kept), so the later checks run on it too.
        """
        ok = check_root(doc, RECOVERABLE)
        if ok:
            doc.findings.extend(schema_findings(doc, self.assembly.schema))
        self.result.findings.extend(doc.findings)
        checked = (
            doc
            if ok and not doc.has_errors
            else (prune_invalid(doc, self.assembly.schema) if ok else None)
        )
        self.incomplete = self.incomplete or checked is None
        return checked

    def add(self, doc: SourceDoc, ident: str, base_dir: str) -> SourceDoc | None:
        """Validate `doc`, add its `extends:` layers, then the (checked) doc itself."""
        checked = self.validate(doc)
        if checked is None:
            return None
        doc = checked
        self.check_store_path(doc)
        self.stack.append(ident)
        self.names.append(doc.name)
        for i, entry in enumerate(doc.data.get("extends") or []):
            self.extend(doc, i, entry, base_dir)
        self.stack.pop()
        self.names.pop()
        self.done.add(ident)
        self.result.layers.append(doc)
        return doc

    def extend(self, doc: SourceDoc, i: int, entry: str, base_dir: str) -> None:
        where = doc.positions.get(("extends", i), (1, 1))
        if entry.startswith(BUILTIN):
            found = builtin_source(entry[len(BUILTIN) :])
            if found is None:
                names = ", ".join(builtin_names())
                doc.error(
                    where,
                    f"unknown bundled pack {entry!r}",
                    f"bundled packs: {names}",
                    "extends",
                    path=("extends", i),
                )
                self.result.findings.append(doc.findings[-1])
                return
            ident, text, name = found[0], found[1], entry
            child_dir = os.path.dirname(ident)
        else:
            found_file = self.read_extended(doc, i, entry, base_dir)
            if found_file is None:
                return
            ident, name, text = found_file
            child_dir = os.path.dirname(ident)
        if ident in self.stack:
            start = self.stack.index(ident)
            chain = " -> ".join([*self.names[start:], self.names[start]])
            doc.error(
                where,
                f"extends cycle: {chain}",
                "remove one of the extends entries",
                "extends-cycle",
                path=("extends", i),
            )
            self.result.findings.append(doc.findings[-1])
            return
        if ident in self.done:
            return
        if len(self.stack) >= MAX_EXTENDS_DEPTH:
            doc.error(
                where,
                f"extends chain deeper than {MAX_EXTENDS_DEPTH} files",
                "",
                "extends",
                path=("extends", i),
            )
            self.result.findings.append(doc.findings[-1])
            return
        child = parse_text(text, name)
        if not entry.startswith(BUILTIN) and not _is_rules_file(child):
            # Not a rules file (a `.env`, a key file...): say so without quoting any of it.
            problem = next((f for f in child.findings if f.level == "error"), None)
            where_in = (
                f" (first problem at line {problem.line}, column {problem.col})" if problem else ""
            )
            self.refuse(
                doc,
                i,
                f"cannot extend {entry!r}: not a rules file{where_in}",
                "an extends entry names a YAML or JSON5 rules file with `version: 1`; "
                "run `loopguard lint` on it to see more",
            )
            return
        self.add(child, ident, child_dir)

    def check_store_path(self, doc: SourceDoc) -> None:
        """`store.path` (a SQLite file loading creates, with its -wal and -shm) is confined like
        `extends:`: resolved as the store resolves it (relative to the top rules file's folder,
        `~` expanded), it must stay inside that folder tree unless outside paths are allowed."""
        store = doc.data.get("store")
        path = store.get("path") if isinstance(store, dict) else None
        if not isinstance(path, str) or self.allow_outside:
            return
        where = doc.positions.get(("store", "path"), (1, 1))
        try:
            resolved = os.path.realpath(os.path.join(self.root, os.path.expanduser(path)))
        except (OSError, ValueError) as exc:  # a NUL character, ...
            problem: str | None = f"store.path {path[:200]!r} cannot be used: {exc}"
        else:
            problem = (
                None
                if _inside(resolved, self.root)
                else f"store.path {path[:200]!r} points outside the rules file's folder "
                f"({self.root})"
            )
        if problem is not None:
            doc.error(
                where,
                problem,
                "keep the database under that folder, or pass a store to the Guard "
                "(Guard(..., store=SqliteStore(path))); to allow it, pass "
                "--allow-extends-outside (CLI) or allow_extends_outside=True",
                "store-path",
                path=("store", "path"),
            )
            self.result.findings.append(doc.findings[-1])

    def refuse(self, doc: SourceDoc, i: int, message: str, hint: str) -> None:
        """An error at `extends[i]` of `doc`, recorded in the result too."""
        where = doc.positions.get(("extends", i), (1, 1))
        doc.error(where, message, hint, "extends", path=("extends", i))
        self.result.findings.append(doc.findings[-1])

    def read_extended(
        self, doc: SourceDoc, i: int, entry: str, base_dir: str
    ) -> tuple[str, str, str] | None:
        """(identity, shown name, text) of a file `extends:` entry, or None after an error.

        The path must stay inside `self.root` (unless allowed); a file that cannot be read
        or decoded is reported by the kind of problem only, never by its content.
        """
        if "\x00" in entry:
            self.refuse(doc, i, "extends entry contains a NUL character", "check the path")
            return None
        try:
            ident = os.path.realpath(os.path.join(base_dir, entry))
        except (OSError, ValueError) as exc:
            self.refuse(doc, i, f"cannot extend {entry!r}: {exc}", "check the path")
            return None
        if not self.allow_outside and not _inside(ident, self.root):
            self.refuse(
                doc,
                i,
                f"extends {entry!r} points outside the rules file's folder ({self.root})",
                "keep extended files under that folder or use "
                "builtin:NAME; to allow it, pass --allow-extends-outside (CLI) or "
                "allow_extends_outside=True (Guard.from_file/from_yaml/from_dict)",
            )
            return None
        name = os.path.relpath(ident) if not os.path.isabs(entry) else entry
        raw, read_doc = read_path(ident)
        text = None
        if raw is not None:
            text, read_doc = decode(raw, name)
        if text is None:
            first = read_doc.findings[0] if read_doc.findings else None
            reason = (
                first.message
                if first is not None and first.code == "unreadable"
                else f"not a rules file ({_KINDS.get(first.code if first else '', 'unreadable')})"
            )
            self.refuse(
                doc,
                i,
                f"cannot extend {entry!r}: {reason}",
                "check the path (it is relative to this file)",
            )
            return None
        return ident, name, text

    def run(self, top: SourceDoc, ident: str, base_dir: str) -> Analysis:
        self.result.source = top.name
        self.root = os.path.realpath(base_dir)
        base = builtin_source(BASE[len(BUILTIN) :])
        self.result.layers.append(_defaults_layer(self.assembly))
        if base is not None and base[0] != ident:
            self.add(parse_text(base[1], BASE), base[0], base_dir)
        checked = self.add(top, ident, base_dir)
        if self.incomplete or any(
            f.code in ("extends", "extends-cycle") for f in self.result.findings
        ):
            return self.result  # a missing layer: later checks would judge an incomplete merge
        if checked is None or not self.result.layers or self.result.layers[-1] is not checked:
            return self.result
        defaults, *written = self.result.layers
        data: dict[str, Any] = {}
        for layer in written:
            data = deep_merge(data, {k: v for k, v in layer.data.items() if k != "extends"})
        _fill_in(data, defaults.data)
        self.result.data = data
        return self.result


def _defaults_layer(assembly: Assembly) -> SourceDoc:
    """The option defaults of every detector the schema knows, as a layer of their own: a
    detector's options schema is the one place they are written (not `builtin:default`)."""
    block = assembly.schema["properties"]["detectors"]["properties"]
    data = {ident: option_defaults(block[ident]) for ident in assembly.detector_ids}
    return SourceDoc(DEFAULTS, {"detectors": data})


def _fill_in(data: dict[str, Any], defaults: dict[str, Any]) -> None:
    """Merge the defaults layer under `data`, keeping the order the files wrote their keys in
    (a detector's written options first, then the defaults it did not write)."""
    detectors = data.setdefault("detectors", {})
    if not isinstance(detectors, dict):
        return
    for ident, options in defaults["detectors"].items():
        block = detectors.setdefault(ident, {})
        if isinstance(block, dict):
            for key, value in options.items():
                block.setdefault(key, copy_tree(value))


def analyze_doc(
    doc: SourceDoc,
    ident: str,
    base_dir: str,
    assembly: Assembly | None = None,
    allow_extends_outside: bool = False,
) -> Analysis:
    """Load a parsed source with its layers; nothing is raised.

    `extends:` paths must resolve (symbolic links followed) inside `base_dir`'s tree
    unless `allow_extends_outside`; `builtin:NAME` packs are always allowed.
    """
    loader = LayerLoader(assembly or default_assembly(), allow_extends_outside)
    return loader.run(doc, ident, base_dir)


_KINDS = {"too-large": "too large", "encoding": "not UTF-8 text", "binary": "binary data"}


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # another drive, or a mix of absolute and relative paths
        return False


def _is_rules_file(doc: SourceDoc) -> bool:
    """Did the text parse (perhaps with errors) into a mapping that has a `version` key?"""
    return isinstance(doc.data, dict) and "version" in doc.data
