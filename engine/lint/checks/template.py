"""A message template with an unknown field, a format spec, a conversion, attribute access or a lone brace (templates are plain `{name}` substitution).

Fails: `blocked: '{message:>2000000000}'`.
"""  # noqa: E501 - the first line is the summary `lint --list-checks` shows

from __future__ import annotations

from loopguard.lint.checks.context import Findings, LintContext
from loopguard.text.templates import problems

CODE = "template"
LEVEL = "error"
STAGE = "references"
BLOCKS_LOAD = True  # run by the rules loader: rules with this error do not load
WHOLE_RULES = True  # it walks every scope itself


def check(ctx: LintContext) -> Findings:
    """Every bad template of the merged rules (the language: `loopguard.text.templates`)."""
    hint = "write fields as {message}; double a literal brace: {{ or }}"
    for prefix, block in ctx.merged_scopes():
        messages = block.get("messages")
        for lang, texts in messages.items() if isinstance(messages, dict) else ():
            for key, text in texts.items() if isinstance(texts, dict) else ():
                path = prefix + ("messages", lang, key)
                for problem in problems(key, text) if isinstance(text, str) else ():
                    yield ctx.finding(path, LEVEL, problem, hint, CODE)
