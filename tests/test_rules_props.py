"""Property tests for rules documents (issue #10): valid and mutated, YAML and JSON5.

Whatever the text, lint and loading either succeed or report the package's own error
(`RulesError`, lint findings) with a `line:col` position, printable as UTF-8; nothing
else may escape. The CI profile (tests/conftest.py) is short and derandomised; a longer
search: `HYPOTHESIS_PROFILE=long python -m pytest -q tests/test_rules_props.py`.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopguard.config.layers import load
from loopguard.errors import RulesError
from loopguard.lint.linter import lint_bytes

pytestmark = pytest.mark.slow  # Hypothesis searches over whole rules documents

SEEDS = [
    resources.files("loopguard.rules").joinpath(name).read_text("utf-8")
    for name in ("default.yaml", "portfolio-en.yaml")
]
SEEDS.append(
    "{version: 1, loop_detection: {enabled: true, warning_threshold: 4}, "
    'messages: {en: {blocked: "no: {message}"}}, extends: ["builtin:portfolio"]}'
)
SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large]

words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
small = st.integers(min_value=-5, max_value=200)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    small,
    st.floats(allow_nan=False),
    words,
    st.integers(min_value=-(2**70), max_value=2**70),
)


@st.composite
def documents(draw: Any) -> dict[str, Any]:
    """Rules documents close to valid: real keys with values drawn near their domain."""
    doc: dict[str, Any] = {"version": draw(st.sampled_from([1, 1, 1, 1.0, 2, "1", True]))}
    if draw(st.booleans()):
        doc["loop_detection"] = draw(
            st.dictionaries(
                st.sampled_from(
                    [
                        "enabled",
                        "warning_threshold",
                        "critical_threshold",
                        "history_size",
                        "global_circuit_breaker_threshold",
                        "unknown_tool_threshold",
                    ]
                ),
                st.one_of(small, st.booleans()),
                max_size=4,
            )
        )
    if draw(st.booleans()):
        doc["keyword_sets"] = draw(st.dictionaries(words, st.lists(words, max_size=3), max_size=3))
    if draw(st.booleans()):
        doc["messages"] = {
            "en": draw(
                st.dictionaries(
                    st.sampled_from(["blocked", "warn_note", "breaker", "round_cap", "retry"]),
                    st.one_of(
                        words,
                        st.sampled_from(
                            ["{message}", "{rounds}", "{x.y}", "{message:>9}", "{{ok}}", "}", "{"]
                        ),
                    ),
                    max_size=3,
                )
            )
        }
    if draw(st.booleans()):
        doc["detectors"] = {
            "unknown_tool_repeat": {
                "patterns": draw(
                    st.lists(
                        st.sampled_from(
                            ["x+", "(a+)+", "(?:(?:a{1000}){1000}){1000}", "(", "\\p{L}+", "a{3,}"]
                        ),
                        max_size=2,
                    )
                )
            }
        }
    if draw(st.booleans()):
        doc[draw(words)] = draw(scalars)
    if draw(st.booleans()):
        doc["extends"] = draw(
            st.lists(
                st.sampled_from(
                    ["builtin:portfolio", "builtin:nope", "../x.yaml", "/etc/passwd", "a\x00b"]
                ),
                max_size=2,
            )
        )
    return doc


def _render(doc: dict[str, Any], as_json: bool) -> str:
    if as_json:
        return json.dumps(doc, ensure_ascii=False)
    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)


MUTATIONS = ("truncate", "flip", "insert", "delete", "swap")


@st.composite
def mutated(draw: Any) -> tuple[str, str]:
    """(text, file name): a seed or generated document, then a few text-level mutations."""
    as_json = draw(st.booleans())
    text = draw(st.one_of(st.sampled_from(SEEDS), documents().map(lambda d: _render(d, as_json))))
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        kind = draw(st.sampled_from(MUTATIONS))
        at = draw(st.integers(min_value=0, max_value=max(len(text) - 1, 0)))
        if kind == "truncate":
            text = text[:at]
        elif kind == "flip" and text:
            text = (
                text[:at]
                + chr(draw(st.integers(0, 0x10FFFF).filter(lambda c: not 0xD800 <= c <= 0xDFFF)))
                + text[at + 1 :]
            )
        elif kind == "insert":
            text = (
                text[:at]
                + draw(st.sampled_from(list("{}[],:'\"\n -#&*!|>\\") + ["\\ud83d", "\t"]))
                + text[at:]
            )
        elif kind == "delete":
            text = text[:at] + text[at + 1 :]
        elif kind == "swap":
            text = (
                text[:at]
                + draw(st.sampled_from(["[]", "{}", "null", "1.5", "true", "'s'", "9" * 80]))
                + text[at:]
            )
    name = "rules.json5" if as_json and draw(st.booleans()) else "rules.yaml"
    return text, name


def _positioned(findings: list[Any]) -> None:
    assert findings
    for finding in findings:
        assert finding.line >= 1 and finding.col >= 1, finding
        finding.format_text().encode("utf-8")


@settings(suppress_health_check=SLOW)
@given(documents(), st.booleans())
def test_generated_documents_load_or_fail_with_positions(
    doc: dict[str, Any], as_json: bool
) -> None:
    text = _render(doc, as_json)
    try:
        load(text, "text", "rules.json5" if as_json else "rules.yaml")
    except RulesError as exc:
        _positioned(exc.findings)


@settings(suppress_health_check=SLOW)
@given(mutated())
def test_mutated_text_loads_or_fails_with_positions(case: tuple[str, str]) -> None:
    text, name = case
    try:
        load(text, "text", name)
    except RulesError as exc:
        _positioned(exc.findings)


@settings(suppress_health_check=SLOW)
@given(mutated())
def test_lint_reports_mutated_bytes_with_positions(case: tuple[str, str]) -> None:
    text, name = case
    report = lint_bytes(text.encode("utf-8", "surrogatepass"), name)
    for finding in report.findings:
        assert finding.line >= 1 and finding.col >= 1, finding
        finding.format_text().encode("utf-8")


@settings(suppress_health_check=SLOW)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_crash_lint(raw: bytes) -> None:
    for finding in lint_bytes(raw, "rules.yaml").findings + lint_bytes(raw, "rules.json5").findings:
        finding.format_text().encode("utf-8")
