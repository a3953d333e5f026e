"""Finds detector plugins through entry points and registers them with pluggy.

Discovery is deterministic: this distribution's built-ins first, then
third-party entry points sorted by (distribution, entry name). A plugin that
fails to import, to register, or declares a bad options schema is recorded as
a `PluginFault` named `distribution[entry]` and left out; the rest still work.

Environment:
- `LOOPGUARD_DISABLE_PLUGIN_AUTOLOAD=1` (or true/yes/on) loads only the built-in
  detectors; unset, empty, 0/false/no/off load every plugin; any other value
  disables them with a warning (see `plugincheck.autoload_disabled`).
- `LOOPGUARD_BLOCK_PLUGINS=a,b` skips entries named `a` (entry name,
  `distribution[entry]`, or detector id).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from importlib import import_module, metadata
from typing import Any

import pluggy
from loopguard.detection import hookspecs
from loopguard.detection.detector import Detector
from loopguard.detection.plugincheck import autoload_disabled, detector_problem

GROUP = "loopguard.detectors"
OWN_DISTRIBUTION = "loopguard-engine"
BUILTIN_MODULES = (
    "generic_repeat", "known_poll_no_progress", "ping_pong", "unknown_tool_repeat",
    "global_circuit_breaker", "doom_loop_exact", "doom_loop_fuzzy", "post_compaction_guard",
    "cycle",
)
AUTOLOAD_ENV = "LOOPGUARD_DISABLE_PLUGIN_AUTOLOAD"
BLOCK_ENV = "LOOPGUARD_BLOCK_PLUGINS"


@dataclass(frozen=True)
class PluginFault:
    """A plugin that could not be used, and why."""

    source: str  # distribution[entry]
    stage: str  # "import", "register", "schema", "check"
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.stage} failed: {self.message}"


@dataclass(frozen=True)
class Registered:
    """A detector and where it came from."""

    detector: Detector
    source: str
    builtin: bool

    @property
    def id(self) -> str:
        return self.detector.id

    @property
    def options_schema(self) -> dict[str, Any]:
        return self.detector.options_schema

    @property
    def levels(self) -> tuple[str, ...]:
        return self.detector.levels


@dataclass(frozen=True)
class Registry:
    """Every usable detector (in discovery order) and every fault met on the way."""

    entries: tuple[Registered, ...]
    faults: tuple[PluginFault, ...]
    plugin_manager: pluggy.PluginManager

    @property
    def detectors(self) -> tuple[Registered, ...]:
        return self.entries

    def get(self, detector_id: str) -> Registered | None:
        for entry in self.entries:
            if entry.id == detector_id:
                return entry
        return None


def _blocked() -> set[str]:
    return {name.strip() for name in os.environ.get(BLOCK_ENV, "").split(",") if name.strip()}


def _entry_points() -> list[tuple[str, str, Any]]:
    """(distribution, entry name, loader) triples, built-ins first, then sorted."""
    found: list[tuple[str, str, Any]] = []
    for ep in metadata.entry_points(group=GROUP):
        dist = _distribution_name(ep.dist)
        found.append((dist, ep.name, ep.load))
    own = [f for f in found if f[0] == OWN_DISTRIBUTION]
    if not own:  # running from a source tree without installed metadata
        own = [(OWN_DISTRIBUTION, name, _module_loader(name)) for name in BUILTIN_MODULES]
    own_names = {f[1] for f in own}
    others = sorted((f for f in found if f[0] != OWN_DISTRIBUTION), key=lambda f: (f[0], f[1]))
    own.sort(key=lambda f: BUILTIN_MODULES.index(f[1]) if f[1] in BUILTIN_MODULES else len(own_names))
    if others and autoload_disabled(os.environ.get(AUTOLOAD_ENV)):
        others = []
    return own + others


def _distribution_name(dist: Any) -> str:
    """The distribution's `Name`, or "unknown" when its metadata has none or is unreadable.

    `Distribution.name` indexes the metadata, which is deprecated for a missing key on
    Python 3.12+ (a KeyError later); `.get` asks without warning on every version.
    """
    try:
        name = dist.metadata.get("Name") if dist is not None else None
    except Exception:  # unreadable metadata is no reason to skip every plugin
        name = None
    return name if isinstance(name, str) and name else "unknown"


def _module_loader(name: str) -> Any:
    return lambda: import_module(f"loopguard.detectors.{name}")


def build_registry() -> Registry:
    """Discover, import and register every detector plugin, isolating failures."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    blocked = _blocked()
    faults: list[PluginFault] = []
    entries: list[Registered] = []
    seen: set[str] = set()
    for dist, name, load in _entry_points():
        source = f"{dist}[{name}]"
        if name in blocked or source in blocked:
            continue
        try:
            plugin = load()
            pm.register(plugin, name=source)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - a broken plugin (even sys.exit) never takes the host down
            faults.append(PluginFault(source, "import", error_text(exc)))
            continue
        try:  # a misspelt hook name is this plugin's fault, not everyone's
            pm.check_pending()
        except pluggy.PluginValidationError as exc:
            pm.unregister(plugin)
            faults.append(PluginFault(source, "register", str(exc)))
            continue
        try:
            impl = getattr(plugin, "loopguard_register_detectors", None)
            detectors = list(impl() or []) if impl is not None else []
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001
            faults.append(PluginFault(source, "register", error_text(exc)))
            continue
        for detector in detectors:
            problem = detector_problem(detector, seen)
            if problem:
                faults.append(PluginFault(source, "schema" if "schema" in problem else "register", problem))
                continue
            if detector.id in blocked:
                continue
            seen.add(detector.id)
            entries.append(Registered(detector, source, dist == OWN_DISTRIBUTION))
    pm.check_pending()
    return Registry(tuple(entries), tuple(faults), pm)


def error_text(exc: BaseException) -> str:
    """`Type: message`, even when the exception's own `str` raises."""
    try:
        return f"{type(exc).__name__}: {exc}"
    except Exception:  # noqa: BLE001
        return type(exc).__name__


_lock = threading.Lock()
_cached: Registry | None = None


def load_registry(reload: bool = False) -> Registry:
    """The process-wide registry, built once (pass `reload=True` after installing plugins)."""
    global _cached
    with _lock:
        if _cached is None or reload:
            _cached = build_registry()
        return _cached
