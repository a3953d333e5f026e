"""Everything a detector author needs, from one import path: `loopguard.plugin`.

The built-in detectors import only from here and from `loopguard.detectors.support`
(what they share), which keeps this list complete. Names not in `__all__` are
internal and may change. See docs/plugins.md for a walk-through.

- The contract: `Detector` (the base class every detector subclasses: id, levels,
  gating, options schema with defaults, declarations, hooks), the gating values
  `ROLLING` and `UNLESS_DISABLED` (the default is `Detector.gating`), the shared settings
  `ROLLING_SETTINGS` and `TIER_SETTINGS`, and `hookimpl` for
  `loopguard_register_detectors` / `loopguard_register_lint_checks`.
- What a check reads: `Call` (the call being judged), `SessionState`, `HistoryEntry` and the
  history helpers (`same_signature`, `no_progress_streak`, `scoped_newest_first`,
  `entry_of`, `VETO`, `EVIDENCE_MAX`; the `flags` bits `HistoryEntry.FAILED` and
  `HistoryEntry.STATUS`).
- What a check returns: `Vote` (build it with `Detector.vote`).
- Options and shared settings: `thresholds(config)` (the `loop_detection` block) and
  `setting(config, "a.b.c")`, both over the bundled defaults; `short(digest)` for vote
  keys; `PollMatcher.from_config` (the engine's poll classification); `MAX_PATTERN_CHARS`,
  the longest user pattern loading accepts.
- Lint: `LintCheck`, `LintContext` (`ctx.option_scopes(id)`, `ctx.option_finding(...)`),
  `Finding`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopguard.decision import Vote
from loopguard.detection.detector import (
    ROLLING,
    ROLLING_SETTINGS,
    TIER_SETTINGS,
    UNLESS_DISABLED,
    Detector,
    setting,
    short,
    thresholds,
)
from loopguard.detection.hookspecs import hookimpl
from loopguard.detection.marks import PollMatcher
from loopguard.findings import Finding
from loopguard.state.history import (
    EVIDENCE_MAX,
    VETO,
    Call,
    HistoryEntry,
    SessionState,
    entry_of,
    no_progress_streak,
    same_signature,
    scoped_newest_first,
)
from loopguard.text.regexcheck import MAX_PATTERN_CHARS

if TYPE_CHECKING:  # loaded on first use (see __getattr__)
    from loopguard.lint.checks import LintCheck
    from loopguard.lint.checks.context import LintContext

# The lint names load on first use: the linter is not needed to guard calls, and a hook
# process (one per tool call) imports every detector, hence this module.
_LINT_HOMES = {
    "LintCheck": "loopguard.lint.checks",
    "LintContext": "loopguard.lint.checks.context",
}


def __getattr__(name: str) -> object:
    home = _LINT_HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'loopguard.plugin' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


__all__ = [
    "EVIDENCE_MAX",
    "MAX_PATTERN_CHARS",
    "ROLLING",
    "ROLLING_SETTINGS",
    "TIER_SETTINGS",
    "UNLESS_DISABLED",
    "VETO",
    "Call",
    "Detector",
    "Finding",
    "HistoryEntry",
    "LintCheck",
    "LintContext",
    "PollMatcher",
    "SessionState",
    "Vote",
    "entry_of",
    "hookimpl",
    "no_progress_streak",
    "same_signature",
    "scoped_newest_first",
    "setting",
    "short",
    "thresholds",
]
