"""A keyword set the linted file defines but no condition uses.

Dead sets are usually a typo on one side (the set or the condition that was
meant to use it). Only sets the linted file itself defines are reported.

Passes: `keyword_sets: {buy: [buy]}` with `when: {text_contains: buy}`.
Fails: `keyword_sets: {buy: [buy], sell: [sell]}` where nothing uses `sell`.
"""

from __future__ import annotations

from typing import Any

from loopguard.lint.checks.context import Findings, LintContext, keyword_sets, scopes, set_uses

CODE = "unused-set"
LEVEL = "warning"


def used_sets(data: dict[str, Any]) -> set[str]:
    """Names of every keyword set any condition of any scope refers to."""
    return {name for prefix, block in scopes(data) for _, name in set_uses(block, prefix)}


def check(ctx: LintContext) -> Findings:
    used = used_sets(ctx.data)
    for layer in ctx.layers:  # a condition the schema rejected still names its sets
        used |= used_sets(layer.data if layer.original is None else layer.original)
    hint = "use it in a condition or remove it"
    for path, name, _ in keyword_sets(ctx.top):
        if name not in used:
            message = f"keyword set {name!r} is never used"
            yield ctx.finding(path, LEVEL, message, hint, CODE, at_key=True)
