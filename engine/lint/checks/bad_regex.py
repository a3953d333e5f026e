"""A regular expression that does not compile with the `regex` package, or is longer than 500 characters.

Fails: `unknown_tool_repeat: {patterns: ['(unclosed']}`.
"""  # noqa: E501 - the first line is the summary `lint --list-checks` shows

from __future__ import annotations

import regex

from loopguard.config.schema import default_assembly
from loopguard.lint.checks.context import Findings, LintContext, user_patterns
from loopguard.text.regexcheck import MAX_PATTERN_CHARS

CODE = "bad-regex"
LEVEL = "error"
STAGE = "references"
BLOCKS_LOAD = True  # run by the rules loader: rules with this error do not load


def check(ctx: LintContext) -> Findings:
    for prefix, block in ctx.merged_scopes():
        for path, pattern in user_patterns(block, prefix, ctx.assembly or default_assembly()):
            if len(pattern) > MAX_PATTERN_CHARS:
                message = f"pattern is {len(pattern)} characters long (at most {MAX_PATTERN_CHARS})"
                hint = "shorten the pattern; long patterns can be slow to match"
                yield ctx.finding(path, LEVEL, message, hint, CODE)
                continue
            try:
                regex.compile(pattern, regex.IGNORECASE)
            except (regex.error, ValueError, OverflowError) as exc:
                hint = "fix the regular expression (regex syntax)"
                yield ctx.finding(path, LEVEL, f"pattern does not compile: {exc}", hint, CODE)
