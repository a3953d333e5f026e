"""A detector configured or switched on while `loop_detection.enabled: false` keeps it off.

`loop_detection.enabled: false` turns off every rolling detector and
`post_compaction_guard`; their options, or an explicit `enabled: true`, then
do nothing. An agent's own master switch counts for its block.

Passes: `loop_detection: {enabled: false}` and no detector options.
Fails: `loop_detection: {enabled: false}` with `detectors: {generic_repeat: {enabled: true}}`
-> "generic_repeat is enabled but loop_detection.enabled is false, so it never runs".
"""

from __future__ import annotations

from loopguard.findings import Finding
from loopguard.lint.checks.context import LintContext
from loopguard.lint.gates import gate_checks

CODE = "gated-off"
LEVEL = "warning"


def check(ctx: LintContext) -> list[Finding]:
    return gate_checks(ctx.data, ctx.top, ctx.index, ctx.gating)
