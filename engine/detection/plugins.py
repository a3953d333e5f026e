"""Plugins: find them (metadata only), load them (import, pluggy, contract check), keep them.

Every plugin, built-in or not, is an entry point of the group `loopguard.detectors` naming a
module (or `module:attribute`) that implements the hooks of `hookspecs`; this distribution's
entry points (pyproject.toml) are the only list of the built-ins. `find_plugins` reads
metadata only, so the switches (`LOOPGUARD_DISABLE_PLUGIN_AUTOLOAD`, `LOOPGUARD_BLOCK_PLUGINS`)
apply before any third-party code runs; `build_registry` imports, registers and checks one
plugin at a time, and what fails is a `PluginFault` naming `distribution[entry]` and its stage
while the others load (docs/plugins.md, "Discovery, loading, faults and switches").
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import pluggy

from loopguard.decision import LEVELS
from loopguard.detection import hookspecs
from loopguard.detection.detector import GATINGS, SCRATCH_CODECS, Detector
from loopguard.detection.sandbox import Budget, safe_repr
from loopguard.text.hints import error_text
from loopguard.text.regexcheck import complexity_problem, redos_problem

log = logging.getLogger("loopguard")
GROUP = "loopguard.detectors"
OWN_DISTRIBUTION = "loopguard-engine"
LINT_CHECKS = "lint_checks"  # the built-in lint checks' plugin (not needed to guard calls)
OPTIONAL_PLUGINS = {"otel": "opentelemetry-api"}  # entry -> the distribution its extra installs
AUTOLOAD_ENV = "LOOPGUARD_DISABLE_PLUGIN_AUTOLOAD"
BLOCK_ENV = "LOOPGUARD_BLOCK_PLUGINS"
HOOK_NAMES = tuple(name for name in vars(hookspecs) if name.startswith(f"{hookspecs.PROJECT}_"))
# An options schema's size: jsonschema checks a schema at ~0.6 ms a value (100,000
# properties hung registration); the largest built-in schema has 59 values.
MAX_SCHEMA_VALUES = 1_000
MAX_SCHEMA_DEPTH = 32
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")
_SETTING = re.compile(r"^(?!detectors\.)[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")
_OPENCLAW = re.compile(r"^[a-z][A-Za-z0-9]*$")
_T = TypeVar("_T")


class Plugin(NamedTuple):
    """A plugin found but not yet imported: where it comes from and what to import."""

    package: str  # the distribution's name ("unknown" when its metadata has none)
    name: str  # the entry point's name
    value: str  # the entry point's target: "module" or "module:attribute"
    builtin: bool = False

    @property
    def source(self) -> str:
        """`package[entry]`: how faults, listings and decisions name this plugin."""
        return f"{self.package}[{self.name}]"


def find_plugins(*, autoload: bool = True, blocked: Iterable[str] = ()) -> list[Plugin]:
    """The built-ins, then third-party plugins (if `autoload`) by (distribution, entry name),
    the first on `sys.path` winning, without those `blocked` names (entry or `package[entry]`)."""
    from importlib import metadata  # ~40 ms to import: only when plugins are looked for

    entries: Iterable[Any] = ()
    if autoload:
        entries = metadata.entry_points(group=GROUP)
    else:  # the built-ins only
        try:
            entries = metadata.distribution(OWN_DISTRIBUTION).entry_points.select(group=GROUP)
        except metadata.PackageNotFoundError:
            pass
    extras = {  # this distribution's optional plugins whose extra is installed
        name for name, needs in OPTIONAL_PLUGINS.items() if any(metadata.distributions(name=needs))
    }
    unique: dict[tuple[str, str], Plugin] = {}
    for entry in entries:
        package = distribution_name(entry.dist)
        builtin = package == OWN_DISTRIBUTION and entry.name not in OPTIONAL_PLUGINS
        optional = package == OWN_DISTRIBUTION and not builtin  # it loads like a third-party one
        if builtin or (autoload and (not optional or entry.name in extras)):
            plugin = Plugin(package, entry.name, entry.value, builtin)
            unique.setdefault((package, entry.name), plugin)
    if not any(plugin.package == OWN_DISTRIBUTION for plugin in unique.values()):
        log.warning("loopguard: %s is not installed: no built-in detectors", OWN_DISTRIBUTION)
    found = sorted(unique.values(), key=lambda p: (not p.builtin, p.package, p.name))
    skip = set(blocked)
    return [plugin for plugin in found if plugin.name not in skip and plugin.source not in skip]


def distribution_name(dist: Any) -> str:
    """The distribution's `Name`, else "unknown" (`.get`: `Distribution.name` warns if missing)."""
    try:
        name = dist.metadata.get("Name") if dist is not None else None
    except Exception:  # unreadable metadata is no reason to skip every plugin
        name = None
    return name if isinstance(name, str) and name else "unknown"


def autoload_disabled(value: str | None) -> bool:
    """Whether the env value disables third-party plugins (an unknown value does, and warns)."""
    text = (value or "").strip().lower()
    if text in _FALSE:
        return False
    if text not in _TRUE:
        log.warning(
            "loopguard: LOOPGUARD_DISABLE_PLUGIN_AUTOLOAD=%r is not one of 1/true/yes/on "
            "or 0/false/no/off; third-party plugins stay disabled",
            value,
        )
    return True


@dataclass(frozen=True)
class PluginFault:
    """A plugin that could not be used, and why."""

    source: str  # distribution[entry]
    stage: str  # "import", "register", "schema"
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.stage} failed: {self.message}"


class _Refused(Exception):
    """One plugin is left out; `stage` and the message say why."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__("; ".join(line.strip() for line in message.splitlines() if line.strip()))
        self.stage = stage  # pluggy's messages span lines; a fault is listed on one


def _contained(stage: str, function: Callable[..., _T], *args: Any) -> _T:
    """`function(*args)`; what it raises but `KeyboardInterrupt` (even `SystemExit`) refuses
    the plugin at `stage`."""
    try:
        return function(*args)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a broken plugin never takes the host down
        text = str(exc) if isinstance(exc, pluggy.PluginValidationError) else error_text(exc)
        raise _Refused(stage, text) from None


class LoadedPlugin(NamedTuple):
    """A plugin registered with the plugin manager."""

    plugin: Plugin
    obj: Any  # the module or object pluggy registered


def new_plugin_manager() -> pluggy.PluginManager:
    """A plugin manager that knows loopguard's hookspecs."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    return pm


def build_registry(
    plugins: list[Plugin] | None = None, checked: Callable[[Plugin, Any], bool] | None = None
) -> Registry:
    """Import, register and check each of `plugins` (by default what the environment lets
    `find_plugins` find) in order, skipping the detector ids `LOOPGUARD_BLOCK_PLUGINS` names;
    `checked(plugin, module)` true: its detectors passed the contract check before (the hook's
    cache knows), so only their ids are checked again."""
    blocked = {name.strip() for name in os.environ.get(BLOCK_ENV, "").split(",") if name.strip()}
    if plugins is None:
        autoload = not autoload_disabled(os.environ.get(AUTOLOAD_ENV))
        plugins = find_plugins(autoload=autoload, blocked=blocked)
    pm = new_plugin_manager()
    loaded: list[LoadedPlugin] = []
    entries: list[Registered] = []
    faults: list[PluginFault] = []
    seen: set[str] = set()
    for plugin in plugins:
        try:
            obj = _contained("import", _import, plugin.value)
            known_good = checked is not None and checked(plugin, obj)
            offered = _contained("register", _register, pm, plugin, obj, known_good)
        except _Refused as exc:
            if pm.get_plugin(plugin.source) is not None:  # pluggy < 1.6 registers part of it first
                pm.unregister(name=plugin.source)
            faults.append(PluginFault(plugin.source, exc.stage, str(exc)))
            continue
        for detector in offered:
            problem = detector_problem(detector, seen, full=not known_good)
            if problem:
                stage = "schema" if "schema" in problem else "register"
                faults.append(PluginFault(plugin.source, stage, problem))
            elif detector.id not in blocked:
                seen.add(detector.id)
                entries.append(Registered(detector, plugin.source, plugin.builtin))
        loaded.append(LoadedPlugin(plugin, obj))
    return Registry(tuple(entries), tuple(faults), pm, tuple(loaded))


def _import(value: str) -> Any:
    """`module` or `module:attr.path` (extras in [] ignored), loaded as `EntryPoint.load` does."""
    module_name, _, attrs = value.split("[", 1)[0].partition(":")
    obj: Any = importlib.import_module(module_name.strip())
    for name in filter(None, attrs.strip().split(".")):
        obj = getattr(obj, name)
    return obj


def _register(pm: pluggy.PluginManager, plugin: Plugin, obj: Any, known_good: bool) -> list[Any]:
    """pluggy's validation and ours (unless it passed them before), one plugin at a time so a
    fault is this plugin's; then what its `loopguard_register_detectors` returns."""
    pm.register(obj, plugin.source)
    if not known_good:
        _check_impls(pm, obj)
    hooks = hook_functions(pm, "loopguard_register_detectors", obj)
    return [detector for function in hooks for detector in function() or ()]


def _check_impls(pm: pluggy.PluginManager, obj: Any) -> None:
    """pluggy's `check_pending`, then what it accepts but never runs: no marker, a default."""
    pm.check_pending()
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
    callers = pm.get_hookcallers(obj) or ()
    impls = [impl for caller in callers for impl in caller.get_hookimpls() if impl.plugin is obj]
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


def hook_functions(pm: pluggy.PluginManager, hook: str, obj: Any) -> list[Callable[..., Any]]:
    """The implementation(s) of `hook` (a hookspec's name) the registered plugin `obj` provides."""
    return [impl.function for impl in getattr(pm.hook, hook).get_hookimpls() if impl.plugin is obj]


def detector_problem(detector: Any, seen: set[str], full: bool = True) -> str | None:
    """Why a registered object cannot be used as a detector, or None (`full=False`: it passed
    before, only its id is checked). What its attributes raise but `KeyboardInterrupt` makes
    the detector unusable, not the registry."""
    try:
        if not isinstance(detector, Detector):
            return f"{safe_repr(detector)} is not a detector: subclass loopguard.plugin.Detector"
        ident = detector.id
        if not isinstance(ident, str) or not ident.isidentifier():
            return f"detector {safe_repr(detector)} has no valid `id` (a Python identifier)"
        if ident in seen:
            return f"detector id {ident!r} is already registered"
        problem = _declaration_problem(detector) if full else None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a hostile attribute or property
        return f"detector {safe_repr(detector)} cannot be inspected: {error_text(exc)}"
    return f"detector {ident!r}: {problem}" if problem else None


def _tuple_of(
    value: Any, usable: Callable[[Any], Any] = lambda item: isinstance(item, str)
) -> bool:
    """Is `value` a tuple (or list) of usable items (by default: strings)?"""
    return isinstance(value, (tuple, list)) and all(usable(item) for item in value)


def _declaration_problem(detector: Detector) -> str | None:
    """What is wrong with a detector's declarations (docs/plugins.md, "The contract")."""
    for name in ("check", "configure", "after", "compacted"):
        if not callable(getattr(detector, name)):
            return f"`{name}` is not callable"
    levels = detector.levels
    if not _tuple_of(levels, lambda v: isinstance(v, str) and v in LEVELS):
        return f"`levels` must be a tuple of {', '.join(LEVELS)}, not {safe_repr(levels)}"
    if detector.gating not in GATINGS:
        return f"`gating` must be one of {', '.join(GATINGS)}"
    if not _tuple_of(detector.settings, lambda s: isinstance(s, str) and _SETTING.match(s)):
        return (
            "`settings` must be a tuple of dotted paths outside `detectors.` "
            "(e.g. 'loop_detection.warning_threshold')"
        )
    if not _tuple_of(detector.bounded_by, lambda p: _tuple_of(p) and len(p) == 2):
        return "`bounded_by` must be (threshold, window) option-name pairs"
    name = detector.openclaw_name
    if name and not (isinstance(name, str) and _OPENCLAW.match(name)):
        return "`openclaw_name` must be a camelCase name"
    if detector.scratch_codec not in SCRATCH_CODECS:
        return f"`scratch_codec` must be one of {', '.join(SCRATCH_CODECS)}"
    if getattr(detector, "defaults", None):
        return (
            "`defaults` is not read; put each option's default in its options_schema "
            'property (`"default": ...`)'
        )
    if not isinstance(detector.lint_checks, (tuple, list)):
        return "`lint_checks` must be a tuple of LintCheck records"
    explain = detector.explain_options
    if explain is not None and not _tuple_of(explain):
        return "`explain_options` must be a tuple of option names or None"
    return schema_problem(detector.options_schema)


def schema_problem(schema: Any) -> str | None:
    """Why an options schema cannot be used, or None: it must be a valid Draft 2020-12 schema,
    bounded in size, with local `$ref`s that resolve and `pattern`s and `patternProperties`
    keys within the regex limits (keys also free of ReDoS: jsonschema matches them with `re`)."""
    if not isinstance(schema, dict):
        return "options schema must be a mapping"
    problem = _size_problem(schema)
    if problem is None:
        # jsonschema (~0.1 s to import) loads with the first schema checked: a hook process
        # whose plugins were checked before never needs it (loopguard.hooks)
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            return f"invalid options schema: {exc.message}"
        problem = next(_refused(schema), None)
    return f"options schema {problem}" if problem else None


def _refused(schema: dict[str, Any]) -> Iterator[str]:
    """What the `$ref`s, `pattern`s and `patternProperties` keys of a valid schema break."""
    for key, value, _ in _walk(schema):
        if key in ("$ref", "$dynamicRef") and isinstance(value, str):
            if not value.startswith("#"):
                yield f"$ref {value!r} is not local (only #... references are supported)"
            elif not _resolves(schema, value):
                yield f"$ref {value!r} does not resolve"
        elif key == "pattern" and isinstance(value, str) and (problem := complexity_problem(value)):
            yield f"pattern refused: {problem}"
        elif key == "patternProperties" and isinstance(value, Mapping):
            for pattern in value:
                problem = complexity_problem(pattern) or redos_problem(pattern)
                if problem:
                    yield f"patternProperties key refused: {problem}"


def _size_problem(schema: dict[str, Any]) -> str | None:
    """Why a schema is too large or deep to check (counted before jsonschema sees it)."""
    for count, (_, value, depth) in enumerate(_walk(schema), 1):
        if count > MAX_SCHEMA_VALUES:
            return f"has more than {MAX_SCHEMA_VALUES:,} values (keywords and items)"
        if depth >= MAX_SCHEMA_DEPTH and isinstance(value, (Mapping, list)):
            return f"is nested deeper than {MAX_SCHEMA_DEPTH} levels"
    return None


def _walk(node: Any) -> Iterator[tuple[Any, Any, int]]:
    """(key or list index, value, depth: 1 for the schema's own keys) of all in a schema."""
    stack = [(node, 1)]
    while stack:
        item, depth = stack.pop()
        for key, value in item.items() if isinstance(item, Mapping) else enumerate(item):
            yield key, value, depth
            if isinstance(value, (Mapping, list)):
                stack.append((value, depth + 1))


def _resolves(schema: dict[str, Any], ref: str) -> bool:
    """Does a local JSON pointer (`#`, `#/$defs/x`) name a value of the schema?"""
    pointer = ref[1:]
    if not pointer:
        return True
    if not pointer.startswith("/"):
        return any(k == "$anchor" and v == pointer for k, v, _ in _walk(schema))
    node: Any = schema
    for part in pointer[1:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return True


@dataclass(frozen=True)
class Registered:
    """A detector and where it came from."""

    detector: Detector
    source: str
    builtin: bool
    # A plugin's time record (sandbox.Budget): one per registered detector, so one that
    # overran is disabled for the process, in every compiled policy.
    budget: Budget = field(default_factory=Budget, compare=False, repr=False)

    @property
    def id(self) -> str:
        return self.detector.id


@dataclass(frozen=True, eq=False)
class Registry:
    """Every usable detector (in discovery order) and every fault met on the way; compared and
    hashed by identity (caches are keyed by it, and a plugin's objects need not be hashable)."""

    entries: tuple[Registered, ...]
    faults: tuple[PluginFault, ...]
    plugin_manager: pluggy.PluginManager
    plugins: tuple[LoadedPlugin, ...] = ()  # every plugin registered, built-ins first

    def get(self, detector_id: str) -> Registered | None:
        return next((entry for entry in self.entries if entry.id == detector_id), None)

    def implementations(self, hook: str) -> list[tuple[Plugin, Callable[..., Any]]]:
        """(plugin, function) of every implementation of `hook`, in plugin order, for a host that
        calls them one at a time: one that raises is named, the others still answer."""
        return [
            (loaded.plugin, function)
            for loaded in self.plugins
            for function in hook_functions(self.plugin_manager, hook, loaded.obj)
        ]


_lock = threading.Lock()
_cached: Registry | None = None


def load_registry(
    reload: bool = False,
    *,
    plugins: list[Plugin] | None = None,
    checked: Callable[[Plugin, Any], bool] | None = None,
) -> Registry:
    """The process-wide registry, built once (`reload=True` after installing plugins); `plugins`
    and `checked` (see `build_registry`) apply when this call builds it (the hook process
    passes its cache of what discovery found)."""
    global _cached
    with _lock:
        if _cached is None or reload:
            _cached = build_registry(plugins, checked)
        return _cached


def registry_or_none() -> Registry | None:
    """`load_registry()`, or None when the plugin setup is broken: lint, the schema and the
    OpenClaw translation then go on with what they know without it."""
    try:
        return load_registry()
    except Exception:  # noqa: BLE001 - a broken plugin setup must not break lint
        return None
