"""Everything a detector author needs, from one import path: `loopguard.plugin`.

The built-in detectors import only from here (and from their siblings in
`loopguard.detectors`), which is what keeps this list complete. Names not in
`__all__` are internal and may change. See docs/plugins.md for a walk-through.

- The contract: `Detector` (id, levels, gating, options schema with defaults,
  `settings`, `lint_checks`, `bounded_by`, `openclaw_name`, `scratch_codec`,
  hooks), the gating values `ROLLING`, `UNLESS_DISABLED`, `ALWAYS`, the shared
  settings `ROLLING_SETTINGS` and `TIER_SETTINGS`, and
  `hookimpl` for `loopguard_register_detectors` / `loopguard_register_lint_checks`.
- What a check reads: `Call` (the call being judged), `SessionState`, `HistoryEntry` and the history
  helpers (`same_signature`, `no_progress_streak`, `scoped_newest_first`, `entry_of`, `VETO`,
  `FAILED`, `STATUS`, `EVIDENCE_MAX`), `TurnWindow`.
- What a check returns: `Vote` (build it with `Detector.vote`), `LEVELS`.
- Options and shared settings: `thresholds(config)` (the `loop_detection`
  block) and `setting(config, "a.b.c")`, both over the bundled defaults;
  `option_defaults(schema)`; `short(digest)` for vote keys; `PollMatcher.from_config`
  (the engine's poll classification, from the option marked `POLL_TOOLS`); the marks
  `UNKNOWN_TOOL_PATTERNS` / `KNOWN_TOOLS` of the options the engine's unknown-tool
  classification reads (`Call.unknown`, for detectors with `reads_unknown_tools`).
- Lint: `LintCheck`, `LintContext`, `Finding`, `option_scopes` / `option_finding`
  (a detector's effective options in every scope, and a finding placed on them).
- Text helpers: `grams` / `similar` (character 3-gram sets), `safe_compile` /
  `search` / `Deadline` (time-bounded `regex`), `MAX_PATTERN_CHARS`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopguard.decision import LEVELS, Vote
from loopguard.detection.detector import (
    ALWAYS,
    ROLLING,
    ROLLING_SETTINGS,
    TIER_SETTINGS,
    UNLESS_DISABLED,
    Detector,
    option_defaults,
    setting,
    short,
    thresholds,
)
from loopguard.detection.hookspecs import hookimpl
from loopguard.detection.marks import KNOWN_TOOLS, POLL_TOOLS, UNKNOWN_TOOL_PATTERNS
from loopguard.detection.polls import PollMatcher
from loopguard.detectors.support.grams import grams, similar
from loopguard.findings import Finding
from loopguard.state.history import (
    EVIDENCE_MAX,
    FAILED,
    STATUS,
    VETO,
    Call,
    HistoryEntry,
    SessionState,
    entry_of,
    no_progress_streak,
    same_signature,
    scoped_newest_first,
)
from loopguard.state.window import TurnWindow
from loopguard.text.regexcheck import MAX_PATTERN_CHARS, Deadline, safe_compile, search

if TYPE_CHECKING:  # loaded on first use (see __getattr__)
    from loopguard.lint.checks import LintCheck
    from loopguard.lint.checks.context import (
        LintContext,
        OptionScope,
        option_finding,
        option_scopes,
    )

# The lint names load on first use: the linter is not needed to guard calls, and a hook
# process (one per tool call) imports every detector, hence this module.
_LINT_HOMES = {
    "LintCheck": "loopguard.lint.checks",
    "LintContext": "loopguard.lint.checks.context",
    "OptionScope": "loopguard.lint.checks.context",
    "option_finding": "loopguard.lint.checks.context",
    "option_scopes": "loopguard.lint.checks.context",
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
    "ALWAYS",
    "EVIDENCE_MAX",
    "FAILED",
    "KNOWN_TOOLS",
    "LEVELS",
    "MAX_PATTERN_CHARS",
    "POLL_TOOLS",
    "ROLLING",
    "ROLLING_SETTINGS",
    "STATUS",
    "TIER_SETTINGS",
    "UNKNOWN_TOOL_PATTERNS",
    "UNLESS_DISABLED",
    "VETO",
    "Call",
    "Deadline",
    "Detector",
    "Finding",
    "HistoryEntry",
    "LintCheck",
    "LintContext",
    "OptionScope",
    "PollMatcher",
    "SessionState",
    "TurnWindow",
    "Vote",
    "entry_of",
    "grams",
    "hookimpl",
    "no_progress_streak",
    "option_defaults",
    "option_finding",
    "option_scopes",
    "safe_compile",
    "same_signature",
    "scoped_newest_first",
    "search",
    "setting",
    "short",
    "similar",
    "thresholds",
]
