"""A user regular expression prone to catastrophic backtracking (ReDoS).

Nested quantifiers (`(a+)+`, `(\\w+\\s?)*`) or alternatives that can match the
same text under an unbounded repeat (`(a|a)*`, `(\\w|\\d)+`) can take
exponential time on a text that almost matches. Matching is bounded anyway
(50 ms per search, 100 ms per call for all patterns; docs/limits.md), but such
a pattern then silently matches nothing. Checked: every detector option marked
as a regex in its options schema (the unknown-tool patterns),
`outcomes.poll_name_pattern` and intent argument matchers `{regex: ...}`, in
every scope the linted file writes.

Passes: `patterns: ['unknown tool: (?P<name>\\S+)']`.
Fails: `patterns: ['^(\\w+\\s?)*$']`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from loopguard.config.schema import default_assembly
from loopguard.config.source import Path
from loopguard.lint.checks.context import Findings, LintContext, scopes
from loopguard.lint.checks.context import user_patterns as detector_patterns
from loopguard.text.regexcheck import redos_problem

CODE = "redos"
LEVEL = "warning"
HINT = "rewrite it without a repeat inside a repeat, e.g. (a+)+ -> a+, (\\w|\\d)+ -> \\w+"


def user_patterns(block: dict[str, Any], prefix: Path) -> Iterator[tuple[Path, str, bool]]:
    """(path, pattern, case-insensitive) of every user regex in one scope."""
    for path, pattern in detector_patterns(block, prefix, default_assembly()):
        yield path, pattern, True
    outcomes = block.get("outcomes")
    poll = outcomes.get("poll_name_pattern") if isinstance(outcomes, dict) else None
    if isinstance(poll, str):
        yield prefix + ("outcomes", "poll_name_pattern"), poll, True
    intents = block.get("intents")
    for i, intent in enumerate(intents if isinstance(intents, list) else []):
        require = intent.get("require") if isinstance(intent, dict) else None
        args = require.get("args") if isinstance(require, dict) else None
        for name, spec in args.items() if isinstance(args, dict) else ():
            if isinstance(spec, dict) and isinstance(spec.get("regex"), str) and len(spec) == 1:
                path = prefix + ("intents", i, "require", "args", name, "regex")
                yield path, spec["regex"], False


def check(ctx: LintContext) -> Findings:
    for prefix, block in scopes(ctx.top):
        for path, pattern, fold in user_patterns(block, prefix):
            problem = redos_problem(pattern, fold)
            if problem:
                message = f"pattern may backtrack catastrophically: {problem}"
                yield ctx.finding(path, LEVEL, message, HINT, CODE)
