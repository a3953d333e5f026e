"""The schema `loopguard schema` emits works in third-party validators and editors.

No ECMA `format: regex` for Python patterns (check-jsonschema would reject the
bundled packs); every property has a description; every value `rules/default.yaml`
sets is the `default` of its property. Every bundled pack and every valid lint case
in native form passes check-jsonschema and plain jsonschema with that schema.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from loopguard.cli import main
from loopguard.config.json5 import is_openclaw
from loopguard.config.schema import assemble

CASES = Path(__file__).parent / "lint_cases" / "valid"


def _native_cases() -> list[Path]:
    """Valid lint cases written in loopguard's own keys (OpenClaw blocks are translated first)."""
    found = []
    for path in sorted(CASES.rglob("*")):
        if path.suffix in (".yaml", ".yml") and not is_openclaw(
            yaml.safe_load(path.read_text("utf-8"))
        ):
            found.append(path)
    return found


def _packs() -> list[Path]:
    folder = resources.files("loopguard.rules")
    return sorted(Path(str(p)) for p in folder.iterdir() if p.name.endswith(".yaml"))


@pytest.fixture(scope="module")
def schema_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("schema") / "loopguard.schema.json"
    path.write_text(json.dumps(assemble().schema), encoding="utf-8")
    return path


def _nodes(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _nodes(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _nodes(value, f"{path}/{i}")


def test_the_cases_are_there() -> None:
    assert len(_packs()) >= 3 and len(_native_cases()) >= 4


def test_no_ecma_regex_format_and_python_patterns_are_marked() -> None:
    schema = assemble().schema
    formats = [p for p, n in _nodes(schema) if isinstance(n, dict) and n.get("format") == "regex"]
    assert formats == []
    marked = [p for p, n in _nodes(schema) if isinstance(n, dict) and n.get("x-loopguard-regex")]
    assert len(marked) >= 3  # unknown-tool patterns, the shared pattern, intent argument regex


def test_every_property_has_a_description() -> None:
    missing = [
        f"{p}/{key}"
        for p, n in _nodes(assemble().schema)
        if isinstance(n, dict) and isinstance(n.get("properties"), dict)
        for key, prop in n["properties"].items()
        if not (isinstance(prop, dict) and prop.get("description"))
    ]
    assert missing == []


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = schema
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node


def _check(schema: dict[str, Any], node: dict[str, Any], value: Any, path: str) -> int:
    """Each value `value` sets is the default of its property (mappings walked by properties)."""
    inner = _resolve(schema, node)
    if (
        isinstance(value, dict)
        and value
        and "default" not in node
        and isinstance(inner.get("properties"), dict)
    ):
        return sum(
            _check(schema, inner["properties"][key], item, f"{path}.{key}")
            for key, item in value.items()
        )
    if value == {} and isinstance(inner.get("properties"), dict):
        return 0  # an empty block of options: its own options carry the defaults
    assert node.get("default") == value, path
    return 1


def test_every_default_comes_from_default_yaml() -> None:
    schema = assemble().schema
    defaults = yaml.safe_load(
        resources.files("loopguard.rules").joinpath("default.yaml").read_text(encoding="utf-8")
    )
    defaults.pop("version")
    assert _check(schema, schema, defaults, "") >= 50
    loop = schema["$defs"]["loop_detection"]["properties"]
    assert loop["warning_threshold"]["default"] == defaults["loop_detection"]["warning_threshold"]
    assert "default" not in schema["$defs"]["count"]  # shared definitions stay untouched


@pytest.mark.slow
def test_check_jsonschema_accepts_every_pack_and_valid_case(schema_file: Path) -> None:
    files = [str(p) for p in (*_packs(), *_native_cases())]
    done = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--schemafile", str(schema_file), *files],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok -- validation done" in done.stdout


@pytest.mark.slow
def test_check_jsonschema_still_rejects_a_wrong_type(schema_file: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nloop_detection: {warning_threshold: ten}\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--schemafile", str(schema_file), str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1 and "warning_threshold" in done.stdout


@pytest.mark.parametrize("path", [*_packs(), *_native_cases()], ids=lambda p: p.name)
def test_plain_jsonschema_accepts_it(path: Path) -> None:
    validator = Draft202012Validator(
        assemble().schema, format_checker=Draft202012Validator.FORMAT_CHECKER
    )
    errors = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text("utf-8")))]
    assert errors == []


def test_a_pattern_that_does_not_compile_is_still_a_lint_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "r.yaml"
    rules.write_text(
        "version: 1\ndetectors:\n  unknown_tool_repeat: {patterns: ['(?P<name']}\n",
        encoding="utf-8",
    )
    assert main(["lint", str(rules)]) == 1
    assert "error[bad-regex]: pattern does not compile" in capsys.readouterr().out


def test_the_emitted_schema_is_valid_draft_2020_12(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    Draft202012Validator.check_schema(json.loads(capsys.readouterr().out))
