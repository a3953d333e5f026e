"""A block under `agents:` for an agent that is not among the names given with `--agent`.

When the agents that run are listed (`--agent A --agent B`), a block for any
other name is dead configuration: a renamed or retired agent. Only blocks the
linted file writes are reported, and only when agent names are given.

Passes: `loopguard lint --agent ops rules.yaml` with `agents: {ops: {...}}`.
Fails: `loopguard lint --agent ops rules.yaml` with `agents: {ops: {...}, old: {...}}`.
"""

from __future__ import annotations

from loopguard.lint.checks.context import Findings, LintContext

CODE = "unused-agent"
LEVEL = "warning"


def check(ctx: LintContext) -> Findings:
    written = ctx.top.get("agents")
    if ctx.agents is None or not isinstance(written, dict):
        return
    listed = ", ".join(ctx.agents)
    for name in [n for n in written if n not in ctx.agents]:
        message = f"agent block {name!r} is never used: the agents given are {listed}"
        hint = f"remove the block, or add --agent {name} if that agent runs"
        yield ctx.finding(("agents", name), LEVEL, message, hint, CODE, at_key=True)
