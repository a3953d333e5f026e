"""A threshold the engine can never reach.

`warning_threshold` above `history_size` (the history never holds that many
calls) and a doom-loop `threshold` above its `window` are errors; the
critical, breaker and unknown-tool thresholds above `history_size` are
warnings (the lower tiers still fire). With `--agent`, only the named agents'
effective settings (and the global ones) are judged.

Passes: `loop_detection: {warning_threshold: 5, history_size: 30}`.
Fails: `loop_detection: {warning_threshold: 40, history_size: 30}`.
"""

from __future__ import annotations

from loopguard.findings import Finding
from loopguard.lint.checks.context import LintContext
from loopguard.lint.thresholds import never_checks

CODE = "never-fires"
LEVEL = "error"


def check(ctx: LintContext) -> list[Finding]:
    return never_checks(ctx.data, ctx.top_name, ctx.index, ctx.agents)
