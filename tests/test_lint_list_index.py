"""A finding about a list item names the index the file wrote (issue 24, item 7).

Lint leaves out the values the schema rejects before its later checks run; an
item after a left-out one must still be named by its place in the file.
"""

from __future__ import annotations

from loopguard.lint.linter import lint_bytes

RULES = (
    "version: 1\n"
    "loop_detection: {enabled: true}\n"
    "detectors:\n"
    "  unknown_tool_repeat:\n"
    "    patterns:\n"
    "      - 'unknown (tool'\n"
    "      - 'no such tool (?P<name>\\w+)'\n"
    "      - '(a+)+'\n"
)


def test_redos_warning_names_the_index_written_after_a_pattern_that_failed() -> None:
    found = {f.code: (f.line, f.path) for f in lint_bytes(RULES.encode(), "r.yaml").findings}
    assert found["bad-regex"] == (6, "detectors.unknown_tool_repeat.patterns[0]")
    assert found["redos"] == (8, "detectors.unknown_tool_repeat.patterns[2]")


def test_redos_warning_index_without_an_earlier_failure() -> None:
    text = RULES.replace("'unknown (tool'", "'unknown tool'")
    found = [(f.code, f.path) for f in lint_bytes(text.encode(), "r.yaml").findings]
    assert ("redos", "detectors.unknown_tool_repeat.patterns[2]") in found
