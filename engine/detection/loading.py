"""Loading plugins that discovery found: import, register with pluggy, check, collect.

Every step is isolated per plugin: what fails becomes a `PluginFault` named
`package[entry]` with the stage it failed at, the plugin is left out (taken
off the plugin manager again), and the next plugin is loaded as if nothing
happened. Stages:

- `import`: the entry point's module (or attribute) cannot be imported;
- `register`: pluggy refuses a hook implementation (an argument the hookspec
  does not have), `check_pending()` finds a hook name no hookspec declares
  (a misspelt hook), an implementation has a parameter with a default (pluggy
  never fills those in), the plugin has no `@loopguard.hookimpl` at all or a
  hook-named function without the marker, or `loopguard_register_detectors`
  raises or hands over a detector that breaks the contract (`plugincheck`);
- `schema`: a detector's options schema is unusable.

Only `BaseException`s other than `KeyboardInterrupt` are caught: `SystemExit`
from plugin code must not end the host.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pluggy

from loopguard.detection import hookspecs
from loopguard.detection.detector import Detector
from loopguard.detection.discovery import Plugin
from loopguard.detection.plugincheck import detector_problem
from loopguard.text.hints import error_text

HOOK_NAMES = tuple(name for name in vars(hookspecs) if name.startswith(f"{hookspecs.PROJECT}_"))


@dataclass(frozen=True)
class PluginFault:
    """A plugin that could not be used, and why."""

    source: str  # distribution[entry]
    stage: str  # "import", "register", "schema", "check"
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.stage} failed: {self.message}"


class _Refused(Exception):
    """One plugin is left out; `stage` and the message say why."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__("; ".join(line.strip() for line in message.splitlines() if line.strip()))
        self.stage = stage  # pluggy's messages span lines; a fault is listed on one


@dataclass(frozen=True)
class LoadedPlugin:
    """A plugin registered with the plugin manager, and the detectors it handed over."""

    plugin: Plugin
    obj: Any  # the module or object pluggy registered
    detectors: tuple[Detector, ...] = ()


@dataclass
class Loaded:
    """What `load_plugins` produced: usable plugins (in order) and every fault."""

    plugins: list[LoadedPlugin] = field(default_factory=list)
    faults: list[PluginFault] = field(default_factory=list)

    def detectors(self) -> Iterator[tuple[Plugin, Detector]]:
        for loaded in self.plugins:
            for detector in loaded.detectors:
                yield loaded.plugin, detector


def new_plugin_manager() -> pluggy.PluginManager:
    """A plugin manager that knows loopguard's hookspecs."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    return pm


def load_plugins(
    plugins: Iterable[Plugin],
    pm: pluggy.PluginManager,
    blocked_ids: Iterable[str] = (),
    checked: Callable[[Plugin, Any], bool] | None = None,
) -> Loaded:
    """Import, register and check each plugin in order, skipping detector ids in `blocked_ids`.

    `checked(plugin, module)` true: its detectors passed the contract checks before (the
    hook's cache knows), so only the duplicate-id check runs again.
    """
    skip = set(blocked_ids)
    loaded = Loaded()
    seen: set[str] = set()
    for plugin in plugins:
        try:
            obj = _import(plugin)
            known_good = checked is not None and checked(plugin, obj)
            _register(pm, plugin, obj, known_good)
            offered = _offered_detectors(pm, plugin, obj)
        except _Refused as exc:
            loaded.faults.append(PluginFault(plugin.source, exc.stage, str(exc)))
            continue
        kept: list[Detector] = []
        for detector in offered:
            if known_good:
                ident = detector.id
                problem = f"detector id {ident!r} is already registered" if ident in seen else None
            else:
                problem = detector_problem(detector, seen)
            if problem:
                stage = "schema" if "schema" in problem else "register"
                loaded.faults.append(PluginFault(plugin.source, stage, problem))
            elif detector.id not in skip:
                seen.add(detector.id)
                kept.append(detector)
        loaded.plugins.append(LoadedPlugin(plugin, obj, tuple(kept)))
    return loaded


def _import(plugin: Plugin) -> Any:
    try:
        return _load_target(plugin.value)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a broken plugin (even sys.exit) never takes the host down
        raise _Refused("import", error_text(exc)) from None


def _load_target(value: str) -> Any:
    """An entry point's `module` or `module:attr.path` (extras in [] ignored), as
    importlib.metadata's `EntryPoint.load` does, without importing importlib.metadata."""
    module_name, _, attrs = value.split("[", 1)[0].partition(":")
    obj: Any = importlib.import_module(module_name.strip())
    for name in filter(None, attrs.strip().split(".")):
        obj = getattr(obj, name)
    return obj


def _register(pm: pluggy.PluginManager, plugin: Plugin, obj: Any, known_good: bool) -> None:
    """pluggy's own validation, one plugin at a time, so a fault is this plugin's (our
    extra checks of its hook functions skipped when it passed them before)."""
    try:
        pm.register(obj, name=plugin.source)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - pluggy's refusal, a hostile `dir()`, ...
        if pm.get_plugin(plugin.source) is not None:  # pluggy < 1.6 registers part of it first
            pm.unregister(name=plugin.source)
        text = str(exc) if isinstance(exc, pluggy.PluginValidationError) else error_text(exc)
        raise _Refused("register", text) from None
    if known_good:
        return
    try:
        pm.check_pending()
        _check_impls(pm, obj)
    except pluggy.PluginValidationError as exc:
        pm.unregister(obj, name=plugin.source)
        raise _Refused("register", str(exc)) from None


def _check_impls(pm: pluggy.PluginManager, obj: Any) -> None:
    """What pluggy accepts silently but never works: no marker, or a defaulted parameter."""
    impls = [
        impl
        for caller in pm.get_hookcallers(obj) or ()
        for impl in caller.get_hookimpls()
        if impl.plugin is obj
    ]
    unmarked = [
        name
        for name in HOOK_NAMES
        if callable(inspect.getattr_static(obj, name, None))
        and pm.parse_hookimpl_opts(obj, name) is None
    ]
    if unmarked:
        raise pluggy.PluginValidationError(
            obj, f"{', '.join(unmarked)} is not marked with @loopguard.hookimpl (pluggy ignores it)"
        )
    if not impls:
        raise pluggy.PluginValidationError(
            obj, f"no @loopguard.hookimpl found (implement one of {', '.join(HOOK_NAMES)})"
        )
    for impl in impls:
        if impl.kwargnames:
            raise pluggy.PluginValidationError(
                obj,
                f"{impl.function.__name__}: parameter(s) {', '.join(impl.kwargnames)} have "
                "a default, which pluggy never fills in (drop the default)",
            )


def _offered_detectors(pm: pluggy.PluginManager, plugin: Plugin, obj: Any) -> list[Any]:
    """What this plugin's `loopguard_register_detectors` returns (called on it alone)."""
    for function in hook_functions(pm, "loopguard_register_detectors", obj):
        try:
            return list(function() or [])
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001
            pm.unregister(obj, name=plugin.source)
            raise _Refused("register", error_text(exc)) from None
    return []


def hook_functions(pm: pluggy.PluginManager, hook: str, obj: Any) -> list[Callable[..., Any]]:
    """The implementation(s) of `hook` that the registered plugin `obj` provides."""
    caller = getattr(pm.hook, hook, None)
    if caller is None:
        return []
    return [impl.function for impl in caller.get_hookimpls() if impl.plugin is obj]
