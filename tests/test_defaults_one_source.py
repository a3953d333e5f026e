"""Every setting's default lives once, in `rules/default.yaml`.

Code reading a setting that a rules dict may lack falls back to `loopguard.rules.default`
(the bundled value), never to a literal of its own: a literal is a second copy that can
drift (two of them had: `doom_loop_fuzzy` fell back to 50 / 0.8 where the rules said
1000 / 0.95). The detectors' own option defaults are checked by test_detector_contract.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import loopguard
from loopguard.rules import bundled_defaults, default

PACKAGE = Path(loopguard.__file__).resolve().parent


def _leaf_keys(value: Any, out: set[str]) -> set[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict):
                _leaf_keys(item, out)
            else:
                out.add(key)
    return out


SETTINGS = _leaf_keys({k: v for k, v in bundled_defaults().items() if k != "detectors"}, set())


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _literal_fallbacks(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and len(node.args) == 2
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value in SETTINGS
            and isinstance(node.args[1], (ast.Constant, ast.List, ast.Dict, ast.Tuple))
        ):
            found.append(
                f"{path.relative_to(PACKAGE)}:{node.lineno}: .get({node.args[0].value!r}, "
                f"{ast.unparse(node.args[1])})"
            )
    return found


def test_the_check_sees_the_settings() -> None:
    # The names the scan looks for: were the set empty, the scan below would pass vacuously.
    assert {
        "history_size",
        "max_tool_rounds",
        "near_similarity",
        "warn_every",
        "language",
    } <= SETTINGS


def test_no_setting_falls_back_to_a_literal_of_its_own() -> None:
    found = [hit for path in _sources() for hit in _literal_fallbacks(path)]
    assert found == [], "settings read with a literal fallback:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "dotted, expected",
    [
        ("turn.max_tool_rounds", 15),
        ("loop_detection.history_size", 30),
        ("aggregator.fail_mode", "open"),
        ("messages.language", "auto"),
        ("turn.nope", None),
    ],
)
def test_default_reads_the_bundled_rules(dotted: str, expected: Any) -> None:
    assert default(dotted) == expected


def test_default_hands_out_copies() -> None:
    steps = default("turn.normalize")
    steps.append("nfkc")
    assert default("turn.normalize") == ["strip", "lower"]


def test_a_mapping_without_the_setting_runs_with_the_bundled_value() -> None:
    # A plain mapping handed to Guard as is: no turn block, no messages, no aggregator.
    guard = loopguard.Guard({"loop_detection": {}})
    session = guard.session("s")
    policy = guard.policy(None)
    assert policy.history_size == 30
    assert policy.turn_policy.max_tool_rounds == 15
    assert policy.turn_policy.context_messages == 4
    assert session.config.get("messages") is None
