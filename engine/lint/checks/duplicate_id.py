"""An intent id used twice in one scope (after merging): decisions and `explain` name intents by id.

Passes: two intents `buy` and `sell`.
Fails: `intents: [{id: buy, ...}, {id: buy, ...}]`.
"""

from __future__ import annotations

from loopguard.lint.checks.context import Findings, LintContext, scopes

CODE = "duplicate-id"
LEVEL = "error"


def check(ctx: LintContext) -> Findings:
    for prefix, block in scopes(ctx.data):
        seen: set[str] = set()
        for i, intent in enumerate(block.get("intents") or []):
            ident = intent.get("id") if isinstance(intent, dict) else None
            if isinstance(ident, str) and ident in seen:
                message, hint = f"intent id {ident!r} is used twice", "give every intent its own id"
                yield ctx.finding(prefix + ("intents", i, "id"), LEVEL, message, hint, CODE)
            seen.add(str(ident))
