"""Fake installed plugins: `*.dist-info` folders and modules written into `tmp_path`.

`importlib.metadata` finds a distribution by its `*.dist-info` folder on
`sys.path`, so a folder with `METADATA` and `entry_points.txt` is all a
plugin needs to be discovered — no pip, no network. `fake_site` puts
`tmp_path` (and the example plugin's `src/`) on `sys.path`, and on exit
restores `sys.path`, the environment, `sys.modules` and loopguard's cached
registry (the one from before the test) so other tests see only the built-ins.
`site` is that as a fixture (conftest.py makes it available to every test).
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

import loopguard.detection.plugins as registry_module
from loopguard.detection.plugins import GROUP, OWN_DISTRIBUTION, Registry, load_registry

EXAMPLE_SRC = Path(__file__).resolve().parents[1] / "examples" / "error-cascade-plugin" / "src"
EXAMPLE_DIST = "loopguard-error-cascade"
EXAMPLE_SOURCE = "loopguard-error-cascade[error_cascade]"
# The built-in detectors as registered: this distribution's entry points into
# `loopguard.detectors` (the only list of them), in entry-name order.
BUILTINS = tuple(
    sorted(
        entry.name
        for entry in metadata.distribution(OWN_DISTRIBUTION).entry_points
        if entry.group == GROUP and entry.value.startswith("loopguard.detectors.")
    )
)
_OUR_MODULES = ("loopguard_error_cascade", "lgfake_")


class FakeSite:
    """A folder on `sys.path` that fake distributions are written into."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.monkeypatch = monkeypatch

    def add_dist(
        self, name: str, entries: Mapping[str, str], modules: Mapping[str, str] | None = None
    ) -> None:
        """A distribution `name` whose `loopguard.detectors` entry points are `entries`."""
        info = self.root / f"{name.replace('-', '_')}-0.1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n", encoding="utf-8"
        )
        lines = "".join(f"{entry} = {target}\n" for entry, target in entries.items())
        (info / "entry_points.txt").write_text(f"[loopguard.detectors]\n{lines}", encoding="utf-8")
        for module, source in (modules or {}).items():
            (self.root / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        importlib.invalidate_caches()

    def add_example(self) -> None:
        """The example plugin, as if `pip install ./examples/error-cascade-plugin` had run."""
        self.monkeypatch.syspath_prepend(str(EXAMPLE_SRC))
        self.add_dist(EXAMPLE_DIST, {"error_cascade": "loopguard_error_cascade"})

    def registry(self) -> Registry:
        """Rebuild loopguard's process-wide registry from what is on `sys.path` now."""
        return load_registry(reload=True)


@contextmanager
def fake_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSite]:
    """A `FakeSite`; everything it changed is undone on exit."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    # Undo puts the registry built before the test back (built-ins only) instead of building
    # a new one per test: the same registry, for about a tenth of a second less per test.
    monkeypatch.setattr(registry_module, "_cached", registry_module._cached)
    try:
        yield FakeSite(root, monkeypatch)
    finally:
        monkeypatch.undo()  # sys.path, the registry and any environment variable the test set
        for name in [m for m in sys.modules if m.startswith(_OUR_MODULES)]:
            del sys.modules[name]
        importlib.invalidate_caches()


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSite]:
    """A `FakeSite` for one test."""
    with fake_site(tmp_path, monkeypatch) as fake:
        yield fake


def ids(registry: Any) -> tuple[str, ...]:
    """The registered detector ids, in registry order."""
    return tuple(entry.id for entry in registry.entries)


def detector_module(class_body: str, detector_id: str) -> str:
    """Source of a plugin module registering one detector whose class body is given."""
    body = textwrap.indent(textwrap.dedent(class_body).strip(), "    ")
    return (
        "import loopguard\n\n\n"
        "class Plugin(loopguard.Detector):\n"
        f"    id = {detector_id!r}\n"
        "    levels = ('warn',)\n"
        f"{body}\n\n\n"
        "@loopguard.hookimpl\n"
        "def loopguard_register_detectors():\n"
        "    return [Plugin()]\n"
    )
