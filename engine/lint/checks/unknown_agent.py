"""An agent named with `--agent` has no block under `agents:`.

Such an agent runs with the global settings, which is fine when meant but is
usually a misspelt name. Only reported when agent names are given.

Passes: `loopguard lint --agent ops rules.yaml` with `agents: {ops: {...}}`.
Fails: `loopguard lint --agent opps rules.yaml` with the same file.
"""

from __future__ import annotations

from loopguard.lint.checks.context import Findings, LintContext

CODE = "unknown-agent"
LEVEL = "warning"


def check(ctx: LintContext) -> Findings:
    agents = ctx.data.get("agents") or {}
    for name in [n for n in ctx.agents or () if n not in agents]:
        message = f"agent {name!r} has no block under agents; it runs with the global settings"
        yield ctx.finding(("agents",), LEVEL, message, "check the --agent name", CODE)
