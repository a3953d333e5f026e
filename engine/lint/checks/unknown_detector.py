"""A detector id no installed plugin provides, under `detectors:` or in `aggregator.order`.

Fails: `detectors: {ping_pang: {}}`.
"""

from __future__ import annotations

from loopguard.config.schema import default_assembly
from loopguard.lint.checks.context import Findings, LintContext
from loopguard.rules import default
from loopguard.text.hints import did_you_mean

CODE = "unknown-detector"
LEVEL = "error"
STAGE = "schema"  # the schema refuses an unknown id under `detectors:`; this, one in the order
BLOCKS_LOAD = True  # run by the rules loader: rules with this error do not load


def check(ctx: LintContext) -> Findings:
    assembly = ctx.assembly or default_assembly()
    # without a registry, the ids known are those the rules name (bundled ones included)
    named = {*(ctx.data.get("detectors") or {}), *(default("aggregator.order") or ())}
    known = set(assembly.detector_ids) if assembly.closed else named
    hint = f"detectors: {', '.join(sorted(known))}"
    for prefix, block in ctx.merged_scopes():
        for i, ident in enumerate((block.get("aggregator") or {}).get("order") or []):
            if isinstance(ident, str) and ident not in known:
                message = f"unknown detector {ident!r}{did_you_mean(ident, known)}"
                yield ctx.finding(prefix + ("aggregator", "order", i), LEVEL, message, hint, CODE)
