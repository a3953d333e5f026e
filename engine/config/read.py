"""Bytes or text of a rules file -> a native `SourceDoc`, whatever the syntax.

Reading refuses what is not a rules file before any parser sees it: files
over `MAX_BYTES` (1 MiB), binary data (a NUL byte), text that is not UTF-8
(a UTF-8 byte-order mark is accepted). Then the syntax is chosen: `.json5` /
`.json` files and texts that start with `{` or a `//` comment are read as
JSON5 (falling back to YAML when only YAML parses), everything else as YAML.
An OpenClaw-shaped document (`tools.loopDetection`, `agents.list`) is
translated into native keys, and so is such a block inside a native mapping
(merged with its native keys); see `openclaw`.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from loopguard.config.json5source import load_json5, looks_like_json5, progress
from loopguard.config.openclaw import is_openclaw, merge_embedded, translate
from loopguard.config.positions import SourceDoc
from loopguard.config.values import check_text, check_values
from loopguard.config.yamlsource import load_yaml

MAX_BYTES = 1024 * 1024


# (code, level, stage, what it means): the codes raised here, as `lint --list-checks`
# and docs/rules.md document them
CODES = (
    (
        "unreadable",
        "error",
        "read",
        "The file cannot be read (missing, a directory, no "
        "permission) or `builtin:NAME` names no bundled pack.\n\nFails: "
        "`loopguard lint missing.yaml`.",
    ),
    (
        "too-large",
        "error",
        "read",
        "The file is larger than a rules file can be (1 MiB).\n\n"
        "Fails: a 5 MiB log passed by mistake.",
    ),
    (
        "encoding",
        "error",
        "read",
        "The file is not UTF-8 (UTF-16, or invalid bytes).\n\n"
        "Fails: a file saved as UTF-16 by an editor.",
    ),
    (
        "binary",
        "error",
        "read",
        "The file holds a NUL byte: binary data, not text.\n\nFails: a gzipped file.",
    ),
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
    checked by `rulevalues.check_values` (integer range, surrogates from escapes).
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
