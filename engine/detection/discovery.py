"""Finding plugins: which modules to load, without importing any of them.

Discovery only reads metadata, so a plugin that is broken (or hostile) at import
cannot affect what is found, and `LOOPGUARD_DISABLE_PLUGIN_AUTOLOAD` and
`LOOPGUARD_BLOCK_PLUGINS` take effect before any third-party code runs.
Importing, registering with pluggy and checking is `loading.py`'s job.

- Built-ins come from `BUILTIN_PLUGINS`, an explicit tuple (no directory scanning, no dependence on
  installed metadata), in that order: the detectors `loopguard.detectors.BUILTINS` names, then the
  built-in lint checks. The `loopguard.detectors` entry points this distribution declares name the
  same detector modules (a test keeps them equal) and are skipped here.
- Third-party plugins are the entry points of the group `loopguard.detectors`
  of every other distribution, one record per (distribution, entry name) — the
  first found on `sys.path` wins, as for imports — sorted by distribution, then
  entry name, so the order never depends on the file system. This distribution's
  optional plugins (`otel`) are found the same way.
- This distribution's optional plugins (`OPTIONAL_PLUGINS`) are found only when the
  distribution their extra installs is there (metadata only): installing
  `loopguard-engine[otel]` is what turns the `otel` plugin on.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from loopguard.detectors import BUILTINS

GROUP = "loopguard.detectors"
OWN_DISTRIBUTION = "loopguard-engine"
LINT_CHECKS = "lint_checks"  # the built-in lint checks' plugin (not needed to guard calls)
BUILTIN_PLUGINS: tuple[tuple[str, str], ...] = (
    *((name, f"loopguard.detectors.{name}") for name in BUILTINS),
    (LINT_CHECKS, "loopguard.lint.checks"),
)


# entry name -> the distribution its extra installs (entry points cannot name extras)
OPTIONAL_PLUGINS = {"otel": "opentelemetry-api"}


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
    """Built-ins first, then third-party plugins sorted (none when `autoload` is false).

    A plugin whose entry name or `package[entry]` is in `blocked` is left out.
    """
    skip = set(blocked)
    found = [Plugin(OWN_DISTRIBUTION, name, value, True) for name, value in BUILTIN_PLUGINS]
    if autoload:
        found.extend(_third_party())
    return [plugin for plugin in found if plugin.name not in skip and plugin.source not in skip]


def _third_party() -> list[Plugin]:
    from importlib import metadata  # ~40 ms to import: only when third-party plugins are looked for

    builtin_names = {name for name, _ in BUILTIN_PLUGINS}
    unique: dict[tuple[str, str], Plugin] = {}
    for entry in metadata.entry_points(group=GROUP):
        package = distribution_name(entry.dist)
        if package == OWN_DISTRIBUTION and entry.name in builtin_names:
            continue  # the built-ins come from BUILTIN_PLUGINS
        if (package, entry.name) in unique or not _installed(package, entry.name, metadata):
            continue
        unique[(package, entry.name)] = Plugin(package, entry.name, entry.value)
    return sorted(unique.values())


def _installed(package: str, name: str, metadata: Any) -> bool:
    """False for an optional plugin of this distribution whose extra is not installed."""
    needs = OPTIONAL_PLUGINS.get(name) if package == OWN_DISTRIBUTION else None
    if needs is None:
        return True
    try:
        metadata.distribution(needs)
    except metadata.PackageNotFoundError:
        return False
    return True


def distribution_name(dist: Any) -> str:
    """The distribution's `Name`, or "unknown" when its metadata has none or is unreadable.

    `Distribution.name` indexes the metadata, which is deprecated for a missing key on
    Python 3.12+ (a KeyError later); `.get` asks without warning on every version.
    """
    try:
        name = dist.metadata.get("Name") if dist is not None else None
    except Exception:  # unreadable metadata is no reason to skip every plugin
        name = None
    return name if isinstance(name, str) and name else "unknown"
