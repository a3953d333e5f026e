"""What a detector is: an id, default levels, an options schema and pure checks.

Built-in and third-party detectors subclass `Detector` (or provide the same
attributes) and hand instances to loopguard through the
`loopguard_register_detectors` hook. The engine then calls them directly on
every tool call; per-session state a detector needs lives in
`SessionState.scratch[detector.id]`, never in the detector object, which is
shared by every session.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from loopguard.decision import Vote
from loopguard.state.history import Call, SessionState

# When a detector runs, relative to `loop_detection.enabled` (SPEC §3):
ROLLING = "rolling"  # when enabled is true, or unset and its own switch is true
UNLESS_DISABLED = "unless_disabled"  # unless enabled is explicitly false
ALWAYS = "always"  # its own `enabled` switch alone decides


class Detector:
    """Base class with no-op hooks; override what the detector needs."""

    id: ClassVar[str] = ""
    levels: ClassVar[tuple[str, ...]] = ()
    gating: ClassVar[str] = ALWAYS
    options_schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}
    # True when the detector compares outcomes as "the same" or "nothing new": the engine
    # then reads each completed call's outcome once (HistoryEntry.flags/shape, see
    # loopguard.policy.outcomes) for every detector of the policy.
    reads_outcomes: ClassVar[bool] = False
    # True when `check` can only vote on a call whose tool and arguments are among the
    # session's recent calls (the history): the engine then skips it for other calls.
    repeats_only: ClassVar[bool] = False
    # Option defaults for detectors whose defaults are not in a bundled rules pack
    # (third-party plugins); the built-ins take theirs from rules/default.yaml.
    defaults: ClassVar[dict[str, Any]] = {}

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        """Compile options once per policy; the result is passed to every check.

        `options` is this detector's block (without `enabled`), `config` the whole
        effective rules dict (thresholds live in `config["loop_detection"]`).
        """
        return {**self.defaults, **options}

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        """Vote on `call` before it runs; history holds only earlier calls."""
        return None

    def record(self, call: Call, state: SessionState, cfg: Any) -> None:
        """Remember what this detector needs of `call` (after every detector checked it)."""

    def after(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        """Vote once the call's outcome is known (`call.outcome` is set)."""
        return None

    def new_turn(self, state: SessionState, cfg: Any) -> None:
        """A new user turn began."""

    def compacted(self, state: SessionState, cfg: Any) -> None:
        """The host compacted the context and is retrying."""

    def vote(
        self, level: str, count: int, key: str, message: str,
        evidence: tuple[int, ...] = (), code: str = "",
    ) -> Vote:
        """A vote from this detector."""
        return Vote(self.id, level, count, f"{self.id}:{key}", message, evidence, code)


def thresholds(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The `loop_detection` block of an effective rules dict (already repaired)."""
    return config.get("loop_detection") or {}


def short(digest: bytes) -> str:
    """A short printable form of a digest, for stable vote keys."""
    return digest[-16:].hex()[:12]
