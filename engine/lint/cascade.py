"""Follow-on lint findings: what a threshold check would say only because a value was rejected.

After `prune` leaves out a value the schema rejected, the merged rules hold the
default in its place. `threshold-repaired` and `never-fires` judge those
effective values, so where the file wrote an invalid number (or block) they
would report on a default the user never chose; the schema error is the one
finding to show. `threshold-order` compares two values the file wrote validly
and is always kept.
"""

from __future__ import annotations

from loopguard.findings import Finding

CASCADING = ("threshold-repaired", "never-fires")  # they judge effective (merged) values
NUMBERS = {
    "history_size",
    "warning_threshold",
    "critical_threshold",
    "unknown_tool_threshold",
    "global_circuit_breaker_threshold",
    "window",
    "threshold",
}


def _within(block: str, gone: str) -> bool:
    """Is `block` the block `gone`, inside it, or an agent's copy of a global `gone`?"""
    if block == gone or block.startswith(gone + "."):
        return True
    return not gone.startswith("agents.") and (block.endswith("." + gone) or f".{gone}." in block)


def follows_from_rejected(finding: Finding, removed: set[str]) -> bool:
    """A finding that follows from a rejected value (the schema error already says it).

    A threshold check judges the effective values; where the file wrote an invalid
    number (or block) it would judge the default instead and report what the user
    never meant.
    """
    if finding.code not in CASCADING or not removed:
        return False
    block = finding.path.rsplit(".", 1)[0] if "." in finding.path else ""
    for gone in removed:
        parent, _, name = gone.rpartition(".")
        if _within(block, gone) or (name in NUMBERS and _within(block, parent)):
            return True
    return False
