"""The hook's Guard, built fast: the loaded rules and the plugin list cached on disk.

A hook process starts for every tool call, so it must not parse YAML, validate against the
JSON Schema, scan installed distributions for plugins and check their schemas each time
(about half a second). The first process does all of that and writes what it learnt to
`$XDG_CACHE_HOME/loopguard/guard-<digest>.json`: the validated rules data, the rules
problems to show the user, the plugins found and which third-party plugins passed their
checks. Later processes use it only while nothing it depends on changed:

- the cache file's name covers the rules argument, the Python interpreter and the plugin
  environment variables;
- inside, `fingerprint` holds the modification time of every `sys.path` folder (installing,
  upgrading or removing a distribution, loopguard included, changes its site-packages
  folder) and of the bundled rules and schema files and the rules loader's modules (an
  editable install's edits); `layers` the size and time of every rules file read (`extends:`
  included); `checked` the time of each third-party plugin's module file.

Anything unreadable, missing or different means the slow path, which rewrites the cache.
A rules document that JSON cannot carry exactly (non-string keys, dates) is never cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import loopguard.config
import loopguard.rules
import loopguard.schemas
from loopguard.detection.plugins import (
    AUTOLOAD_ENV,
    BLOCK_ENV,
    LINT_CHECKS,
    Plugin,
    Registry,
    load_registry,
)
from loopguard.errors import RulesError
from loopguard.session.guard import Guard
from loopguard.state.store import SessionStore

FORMAT = 1
MAX_PROBLEMS = 5  # rules problems kept for the user (the rest: `loopguard lint`)


@dataclass(frozen=True)
class Built:
    """The guard for a rules argument, or None when the rules cannot be loaded."""

    guard: Guard | None
    problems: tuple[str, ...]  # one line each: why the rules failed, or lint errors they have
    source: str
    cached: bool  # built from the cache


# Guards built in this process, by (cache file, store identity), while their entry is fresh:
# the hook server answers many events, a one-shot hook process one.
_memo: dict[tuple[Path, str], tuple[dict[str, Any], Built]] = {}


def build(
    rules: str,
    cache_folder: Path,
    make_store: Callable[[dict[str, Any]], SessionStore | None],
    store_identity: str = "",
) -> Built:
    """A Guard for `rules` (a path or `builtin:NAME`); `make_store(rules data)` gives the
    sessions' store (None: the rules' own `store:` block); `store_identity` names what
    `make_store` depends on, so a remembered guard is reused only for the same store."""
    spec = rules if rules.startswith("builtin:") else os.path.abspath(rules)
    path = cache_folder / f"guard-{_digest([spec, *_identity()])}.json"
    remembered = _memo.get((path, store_identity))
    if remembered is not None and _fresh(remembered[0]):
        return remembered[1]
    entry = _read(path)
    if entry is not None and _fresh(entry):
        data = entry.get("data")
        guard = None if data is None else _guard(entry, make_store(data))
        built = Built(guard, tuple(entry["problems"]), entry["source"], True)
    else:
        entry, document, registry = _slow(spec)
        _write(path, entry)
        guard = None
        if document is not None:
            store = make_store(document.data)
            guard = Guard(document, registry=registry, store=store, source=entry["source"])
        built = Built(guard, tuple(entry["problems"]), entry["source"], False)
    _memo.clear()  # one rules file at a time is the common case; never grow without bound
    _memo[(path, store_identity)] = (entry, built)
    return built


# -- the slow path ------------------------------------------------------------
def _slow(spec: str) -> tuple[dict[str, Any], Any, Registry]:
    """Load and check everything: the cache entry, the document (None: unloadable) and the
    registry."""
    from loopguard.config.layers import analyze, to_document
    from loopguard.lint.linter import meaning_findings

    registry = load_registry()  # the rules schema includes the plugins' options
    document = analysis = None
    problems: list[str] = []
    found = []
    try:
        result = analyze(spec)
        document, analysis = to_document(result), result
        found = [f for f in meaning_findings(analysis) if f.level == "error"]
    except RulesError as exc:
        found = list(exc.findings)
    except OSError as exc:
        problems = [f"{spec}: cannot read the rules: {exc.strerror or exc}"]
    problems = problems or [_one_line(f.format_text()) for f in found[:MAX_PROBLEMS]]
    if len(found) > MAX_PROBLEMS:
        problems.append(f"... and {len(found) - MAX_PROBLEMS} more (run: loopguard lint {spec})")
    layers = [] if analysis is None else [doc.name for doc in analysis.layers]
    entry: dict[str, Any] = {
        "format": FORMAT,
        "fingerprint": fingerprint(),
        "layers": {name: _stat(name) for name in layers if os.path.isfile(name)},
        "source": document.source if document is not None else spec,
        "data": document.data if document is not None else None,
        "problems": problems,
        "plugins": [list(loaded.plugin) for loaded in registry.plugins],
        "checked": _checked(registry),
        "bundled": loopguard.rules.bundled_defaults(),  # default.yaml (its stat: fingerprint)
    }
    return entry, document, registry


def _checked(registry: Registry) -> dict[str, Any]:
    """Third-party plugins that registered without a fault: their module file's stat."""
    faulty = {fault.source for fault in registry.faults}
    return {
        loaded.plugin.source: _module_stat(loaded.obj)
        for loaded in registry.plugins
        if not loaded.plugin.builtin and loaded.plugin.source not in faulty
    }


# -- the fast path --------------------------------------------------------------
def _fresh(entry: dict[str, Any]) -> bool:
    """True while nothing the entry was built from has changed."""
    if entry.get("fingerprint") != fingerprint():
        return False
    layers = entry.get("layers")
    return isinstance(layers, dict) and all(_stat(n) == s for n, s in layers.items())


def _guard(entry: dict[str, Any], store: SessionStore | None) -> Guard:
    """The Guard a fresh cache entry describes (plugins imported, checks skipped if unchanged)."""
    data = entry["data"]
    if isinstance(entry.get("bundled"), dict):
        loopguard.rules.preload(entry["bundled"])
    checked = entry.get("checked") or {}
    # the built-in lint checks' plugin: a hook only guards calls
    plugins = [
        plugin
        for plugin in (Plugin(*row) for row in entry.get("plugins") or ())
        if not (plugin.builtin and plugin.name == LINT_CHECKS)
    ]
    registry = load_registry(  # the process-wide one: rules marks look plugins up there
        plugins=plugins,
        checked=lambda plugin, obj: (
            plugin.builtin or checked.get(plugin.source) == _module_stat(obj)
        ),
    )
    return Guard(data, registry=registry, store=store, source=entry.get("source"))


# -- helpers --------------------------------------------------------------------
def _identity() -> list[str]:
    return [
        sys.executable,
        sys.version,
        os.environ.get(AUTOLOAD_ENV, ""),
        os.environ.get(BLOCK_ENV, ""),
    ]


def fingerprint() -> list[Any]:
    """What a change of the installed plugins or of loopguard's own data files alters."""
    # sys.path[0] is the script's folder or the working directory: not where plugins install
    folders = [[p, _mtime(p)] for p in sys.path[1:] if p and os.path.isdir(p)]
    data: list[list[Any]] = []
    for package in (loopguard.rules, loopguard.schemas, loopguard.config):
        folder = os.path.dirname(package.__file__ or "")
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith((".yaml", ".json", ".py")))
        except OSError:
            names = []
        data.extend([name, _stat(os.path.join(folder, name))] for name in names)
    return [folders, data]


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def _stat(path: str) -> list[int]:
    try:
        info = os.stat(path)
    except OSError:
        return [0, -1]
    return [info.st_mtime_ns, info.st_size]


def _module_stat(obj: Any) -> list[int] | None:
    filename = getattr(obj, "__file__", None) or getattr(
        sys.modules.get(getattr(obj, "__module__", "") or ""), "__file__", None
    )
    return _stat(filename) if isinstance(filename, str) else None


def _digest(parts: list[str]) -> str:
    return hashlib.blake2b("\0".join(parts).encode("utf-8", "replace"), digest_size=16).hexdigest()


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _read(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            entry = json.load(handle)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(entry, dict) or entry.get("format") != FORMAT:
        return None
    if not isinstance(entry.get("problems"), list) or not isinstance(entry.get("source"), str):
        return None
    if not isinstance(entry.get("data"), (dict, type(None))):
        return None
    return entry


def _write(path: Path, entry: dict[str, Any]) -> None:
    """Write the entry atomically, only if JSON carries its data exactly; never raise."""
    try:
        text = json.dumps(entry, ensure_ascii=False, allow_nan=False)
        if json.loads(text) != entry:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except (OSError, TypeError, ValueError, RecursionError):
        return
