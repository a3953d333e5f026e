"""The detector registry: discovery (`discovery.py`) then loading (`loading.py`), built once.

Order is deterministic: the built-ins first, then third-party plugins sorted by
(distribution, entry name). A plugin that fails to import or register, whose
hooks pluggy refuses, or that declares a bad options schema is recorded as a
`PluginFault` named `distribution[entry]` and left out; the rest still work.

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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pluggy

from loopguard.detection.detector import Detector
from loopguard.detection.discovery import GROUP, OWN_DISTRIBUTION, Plugin, find_plugins
from loopguard.detection.loading import (
    LoadedPlugin,
    PluginFault,
    error_text,
    hook_functions,
    load_plugins,
    new_plugin_manager,
)
from loopguard.detection.plugincheck import autoload_disabled
from loopguard.detection.sandbox import Budget

AUTOLOAD_ENV = "LOOPGUARD_DISABLE_PLUGIN_AUTOLOAD"
BLOCK_ENV = "LOOPGUARD_BLOCK_PLUGINS"


@dataclass(frozen=True)
class Registered:
    """A detector and where it came from."""

    detector: Detector
    source: str
    builtin: bool
    # A plugin's time record (loopguard.detection.sandbox): one per registered detector, so
    # one that overran is disabled for the process, in every compiled policy.
    budget: Budget = field(default_factory=Budget, compare=False, repr=False)

    @property
    def id(self) -> str:
        return self.detector.id

    @property
    def options_schema(self) -> dict[str, Any]:
        return self.detector.options_schema

    @property
    def levels(self) -> tuple[str, ...]:
        return self.detector.levels


@dataclass(frozen=True, eq=False)
class Registry:
    """Every usable detector (in discovery order) and every fault met on the way.

    Compared and hashed by identity: caches are keyed by the registry they were built
    from, and a plugin's objects need not be hashable.
    """

    entries: tuple[Registered, ...]
    faults: tuple[PluginFault, ...]
    plugin_manager: pluggy.PluginManager
    plugins: tuple[LoadedPlugin, ...] = ()  # every plugin registered, built-ins first

    @property
    def detectors(self) -> tuple[Registered, ...]:
        return self.entries

    def get(self, detector_id: str) -> Registered | None:
        for entry in self.entries:
            if entry.id == detector_id:
                return entry
        return None

    def implementations(self, hook: str) -> list[tuple[Plugin, Callable[..., Any]]]:
        """(plugin, function) of every registered implementation of `hook`, in plugin order.

        For hooks the host calls one plugin at a time, so a plugin that raises is
        named and the others still answer (pluggy's own call stops at the first).
        """
        return [
            (loaded.plugin, function)
            for loaded in self.plugins
            for function in hook_functions(self.plugin_manager, hook, loaded.obj)
        ]


def _blocked() -> set[str]:
    return {name.strip() for name in os.environ.get(BLOCK_ENV, "").split(",") if name.strip()}


def discover() -> list[Plugin]:
    """The plugins to load, as the environment says (autoload, blocked names)."""
    autoload = not autoload_disabled(os.environ.get(AUTOLOAD_ENV))
    return find_plugins(autoload=autoload, blocked=_blocked())


def build_registry(
    plugins: list[Plugin] | None = None, checked: Callable[[Plugin, Any], bool] | None = None
) -> Registry:
    """Find the plugins (or take `plugins`, what `discover()` found earlier), then load them:
    import, pluggy validation, and the contract checks unless `checked` says they passed."""
    pm = new_plugin_manager()
    found = discover() if plugins is None else plugins
    loaded = load_plugins(found, pm, _blocked(), checked)
    entries = tuple(
        Registered(detector, plugin.source, plugin.builtin)
        for plugin, detector in loaded.detectors()
    )
    return Registry(entries, tuple(loaded.faults), pm, tuple(loaded.plugins))


__all__ = [
    "AUTOLOAD_ENV",
    "BLOCK_ENV",
    "GROUP",
    "OWN_DISTRIBUTION",
    "PluginFault",
    "Registered",
    "Registry",
    "build_registry",
    "discover",
    "error_text",
    "load_registry",
]


_lock = threading.Lock()
_cached: Registry | None = None


def load_registry(
    reload: bool = False,
    *,
    plugins: list[Plugin] | None = None,
    checked: Callable[[Plugin, Any], bool] | None = None,
) -> Registry:
    """The process-wide registry, built once (pass `reload=True` after installing plugins).

    `plugins` and `checked` (see `build_registry`) apply when it is built by this call: the
    hook process builds it from its cache of what discovery found.
    """
    global _cached
    with _lock:
        if _cached is None or reload:
            _cached = build_registry(plugins, checked)
        return _cached
