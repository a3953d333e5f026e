"""A message template whose `{fields}` do not parse.

The engine then shows the template as written instead of filling it in.

Passes: `messages: {en: {warn: "Loop: {message}"}}`.
Fails: `messages: {en: {warn: "Loop: {message"}}` (a brace left open).
"""

from __future__ import annotations

import string

from ..findings import Finding
from ..lintchecks import scopes
from .context import LintContext

CODE = "bad-template"
LEVEL = "warning"


def check(ctx: LintContext) -> list[Finding]:
    found: list[Finding] = []
    for prefix, block in scopes(ctx.top):
        messages = block.get("messages")
        for lang, texts in (messages.items() if isinstance(messages, dict) else ()):
            for key, text in (texts.items() if isinstance(texts, dict) else ()):
                if not isinstance(text, str):
                    continue
                try:
                    list(string.Formatter().parse(text))
                except ValueError as exc:
                    found.append(ctx.finding(
                        prefix + ("messages", lang, key), LEVEL,
                        f"message template does not parse ({exc}); it will be shown as written",
                        "write fields as {message}; double a literal brace: {{ or }}", CODE))
    return found
