"""Imports flow one way between the stage folders, and none hides inside a function.

Every module of the installed package is parsed (nothing of it is imported for this), and
each `import loopguard…` / `from loopguard…` (or relative) statement is an edge. Imports
under `if TYPE_CHECKING:` are for type checkers only and exempt.

- No function-level imports of loopguard modules, except `LAZY` below (each says why): a
  function-level import is how an import cycle hides.
- Folder by folder, a module imports only from folders earlier in `ORDER` (or its own): the
  pipeline of the README's design section, so the folder graph is acyclic. Built-in
  detectors are plugins: they import only what a third-party detector may.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import loopguard
import loopguard.detectors
import loopguard.rules
import loopguard.schemas

# (importing module, imported module) -> why it is imported inside a function. (The package's
# public names load on first use through its `__getattr__`, by name, not by an import
# statement: `import loopguard` must stay cheap for the hook process, see loopguard/__init__.)
LAZY = {
    (
        "loopguard.session.guard",
        "loopguard.config.layers",
    ): "the rules loader (YAML, JSON Schema, layers) loads with the first rules: ~40 ms",
    (
        "loopguard.hooks.client",
        "loopguard.hooks.runner",
    ): "a hook process imports the engine only when no hook server answers its event",
    (
        "loopguard.hooks.client",
        "loopguard.hooks.server",
    ): "the server module (with subprocess) loads only to start a server",
    (
        "loopguard.hooks.guardcache",
        "loopguard.config.layers",
    ): "a hook process loads rules (YAML, JSON Schema) only when its cache is stale",
    (
        "loopguard.hooks.guardcache",
        "loopguard.lint.linter",
    ): "the lint errors of the hook's rules are found when its cache is stale",
    (
        "loopguard.cli",
        "loopguard.cli.streams",
    ): "the hook's fast path in main() answers before the CLI's stream handling loads",
    (
        "loopguard.cli",
        "loopguard.text.terminal",
    ): "the hook's fast path in main() answers before the CLI's output escaping loads",
}

# Each folder may import from the folders before it. "records" are the root modules every
# stage shares; "data" the package-data packages; "detectors.list" the package
# `loopguard.detectors` itself (the built-in module names discovery loads, nothing else).
ORDER = (
    "records",
    "data",
    "detectors.list",
    "text",
    "state",
    "detectors.support",
    "detection",
    "config",
    "lint.checks",  # the checks judge merged rules; the loader runs those that block loading
    "config.layers",  # the front door of loading: layers, then the blocking checks
    "lint",
    "plugin",
    "policy",
    "stores",
    "session",
    "runtime",
    "replay",
    "integrations",
    "mcp",
    "hooks",
    "cli",
    "detectors",
    "package",
)
RECORDS = ("errors", "findings", "decision")
DETECTORS_MAY_IMPORT = frozenset(
    {"records", "text", "state", "detection", "plugin", "detectors.support", "detectors"}
)


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    line: int
    in_function: bool
    type_only: bool

    def __str__(self) -> str:
        return f"{self.src}:{self.line} imports {self.dst}"


def modules() -> dict[str, Path]:
    """Module name -> source file, for every module of the installed package."""
    found: dict[str, Path] = {}
    for package in (loopguard, loopguard.detectors, loopguard.rules, loopguard.schemas):
        prefix = package.__name__  # (an editable install maps these to separate folders)
        root = Path(package.__file__ or "").parent
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([prefix, *parts])] = path
    return found


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def edges_of(name: str, path: Path, known: dict[str, Path]) -> Iterator[Edge]:
    """The loopguard imports of one module, each marked in-function and/or type-only."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Edge] = []

    def visit(node: ast.AST, in_function: bool, type_only: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            in_function = True
        if isinstance(node, ast.If) and _type_checking(node.test):
            for child in node.body:
                visit(child, in_function, True)
            for child in node.orelse:
                visit(child, in_function, type_only)
            return
        if isinstance(node, ast.Import):
            found.extend(
                Edge(name, alias.name, node.lineno, in_function, type_only) for alias in node.names
            )
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"  # `from package import module`
                found.append(
                    Edge(name, full if full in known else base, node.lineno, in_function, type_only)
                )
        for child in ast.iter_child_nodes(node):
            visit(child, in_function, type_only)

    visit(ast.parse(path.read_text(encoding="utf-8")), False, False)
    return (e for e in found if e.dst == "loopguard" or e.dst.startswith("loopguard."))


def all_edges() -> list[Edge]:
    known = modules()
    return [edge for name, path in known.items() for edge in edges_of(name, path, known)]


def folder(module: str) -> str:
    """The node of `ORDER` a module belongs to."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "__main__":
        return "package"
    if parts[1] == "detectors":
        if len(parts) == 2:
            return "detectors.list"
        return "detectors.support" if parts[2] == "support" else "detectors"
    if parts[1] in RECORDS:
        return "records"
    if parts[1] in ("rules", "schemas"):
        return "data"
    if parts[1:3] in (["lint", "checks"], ["config", "layers"]):
        return ".".join(parts[1:3])
    return parts[1]


def test_the_package_is_found_whole() -> None:
    names = modules()
    assert {
        "loopguard",
        "loopguard.session.guard",
        "loopguard.detectors.ping_pong",
        "loopguard.detectors.support.grams",
        "loopguard.rules",
        "loopguard.cli",
    } <= set(names)
    assert {folder(name) for name in names} <= set(ORDER)


def test_no_loopguard_import_hides_inside_a_function() -> None:
    lazy = [e for e in all_edges() if e.in_function and not e.type_only]
    unexplained = [str(e) for e in lazy if (e.src, e.dst) not in LAZY]
    assert unexplained == []
    # every allowance is still needed (a stale one would let a new lazy import through)
    assert {(e.src, e.dst) for e in lazy} == set(LAZY)


def test_folders_import_only_from_earlier_folders() -> None:
    rank = {name: i for i, name in enumerate(ORDER)}
    upward = [
        f"{e} ({folder(e.src)} -> {folder(e.dst)})"
        for e in all_edges()
        if not e.type_only and rank[folder(e.dst)] > rank[folder(e.src)]
    ]
    assert upward == []


def test_detectors_import_only_what_a_plugin_may() -> None:
    wrong = [
        str(e)
        for e in all_edges()
        if folder(e.src) == "detectors"
        and not e.type_only
        and folder(e.dst) not in DETECTORS_MAY_IMPORT
    ]
    assert wrong == []


def test_the_checks_see_function_level_and_type_only_imports(tmp_path: Path) -> None:
    source = (
        "from __future__ import annotations\nfrom typing import TYPE_CHECKING\n"
        "from loopguard.text import hints\nif TYPE_CHECKING:\n"
        "    from loopguard.cli import main\n\n\ndef f() -> None:\n"
        "    from loopguard.session.guard import Guard\n    from . import sibling\n"
    )
    module = tmp_path / "probe.py"
    module.write_text(source, encoding="utf-8")
    known = {
        "loopguard.state.probe": module,
        "loopguard.state.sibling": module,
        "loopguard.text.hints": module,
    }
    found = [
        (e.dst, e.line, e.in_function, e.type_only)
        for e in edges_of("loopguard.state.probe", module, known)
    ]
    assert found == [
        ("loopguard.text.hints", 3, False, False),
        ("loopguard.cli", 5, False, True),
        ("loopguard.session.guard", 9, True, False),
        ("loopguard.state.sibling", 10, True, False),
    ]
    assert [folder(dst) for dst, *_ in found] == ["text", "cli", "session", "state"]
