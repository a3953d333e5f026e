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
    if ctx.agents is None:
        return []
    written = ctx.top.get("agents")
    names = [n for n in (written if isinstance(written, dict) else {}) if n not in ctx.agents]
    listed = ", ".join(ctx.agents)
    return [
        ctx.finding(
            ("agents", name),
            LEVEL,
            f"agent block {name!r} is never used: the agents given are {listed}",
            f"remove the block, or add --agent {name} if that agent runs",
            CODE,
            at_key=True,
        )
        for name in names
    ]
