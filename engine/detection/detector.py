"""What a detector is: an id, default levels, an options schema and pure checks.

Built-in and third-party detectors subclass `Detector` and hand instances to loopguard
through the `loopguard_register_detectors` hook; the engine then calls them directly on
every tool call. Per-session state lives in `SessionState.scratch[detector.id]`, never in
the detector object, which every session shares.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar

from loopguard.decision import Vote
from loopguard.rules import default
from loopguard.state.history import Call, SessionState

# When a detector runs, relative to `loop_detection.enabled`:
ROLLING = "rolling"  # when enabled is true, or unset and its own switch is true
UNLESS_DISABLED = "unless_disabled"  # unless enabled is explicitly false
ALWAYS = "always"  # its own `enabled` switch alone decides
GATINGS = (ROLLING, UNLESS_DISABLED, ALWAYS)
SCRATCH_CODECS = ("json", "derived", "custom")

# Shared settings for `Detector.settings`: a rolling detector's gate and the history it
# walks, and the warn/critical tiers most of them share.
ROLLING_SETTINGS = ("loop_detection.enabled", "loop_detection.history_size")
TIER_SETTINGS = ("loop_detection.warning_threshold", "loop_detection.critical_threshold")


class Detector:
    """Base class with no-op hooks; override what the detector needs.

    The class attributes are its declarations (each is described in docs/plugins.md,
    "The contract"); registration checks them once (`plugins.detector_problem`).
    """

    id: ClassVar[str] = ""
    levels: ClassVar[tuple[str, ...]] = ()
    gating: ClassVar[str] = ALWAYS
    options_schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}
    reads_outcomes: ClassVar[bool] = False  # the engine reads outcomes (policy.outcomes)
    reads_unknown_tools: ClassVar[bool] = False  # the engine classifies failed calls
    repeats_only: ClassVar[bool] = False  # `check` only for calls seen lately (`Call.seen`)
    settings: ClassVar[tuple[str, ...]] = ()  # shared settings it reads, dotted paths
    lint_checks: ClassVar[tuple[Any, ...]] = ()  # `LintCheck` records of its own
    bounded_by: ClassVar[tuple[tuple[str, str], ...]] = ()  # (threshold, window) options
    openclaw_name: ClassVar[str] = ""  # its camelCase name in OpenClaw's rules
    scratch_codec: ClassVar[str] = "json"  # how a session store keeps `scratch[id]`
    explain_options: ClassVar[tuple[str, ...] | None] = None  # what `explain` shows

    @classmethod
    def option_defaults(cls) -> dict[str, Any]:
        """Each option's `default` from `options_schema` (the one place defaults live)."""
        return option_defaults(cls.options_schema)

    def explain_paths(self) -> tuple[str, ...]:
        """The rules values `explain` shows for its votes: its `loop_detection` settings, its
        own options (`explain_options`, else every option in schema order), its other settings."""
        loop = tuple(s for s in self.settings if s.startswith("loop_detection."))
        names = self.explain_options
        if names is None:
            names = tuple(k for k in self.options_schema.get("properties") or {} if k != "enabled")
        rest = tuple(s for s in self.settings if s not in loop)
        return loop + tuple(f"detectors.{self.id}.{k}" for k in names) + rest

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        """Compile options once per policy; the result is passed to every check.

        `options` is this detector's block (without `enabled`), `config` the whole
        effective rules dict (thresholds live in `config["loop_detection"]`). The
        default: the schema's defaults with the written options over them.
        """
        return {**self.option_defaults(), **options}

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        """Vote on `call` before it runs; history holds only earlier calls."""
        return None

    def after(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        """Vote once the call's outcome is known (`call.outcome` is set)."""
        return None

    def compacted(self, state: SessionState, cfg: Any) -> None:
        """The host compacted the context and is retrying."""

    def encode_scratch(self, value: Any) -> Any:
        """Its scratch state as JSON data (`scratch_codec = "custom"`); None: not stored."""
        return None

    def decode_scratch(self, data: Any) -> Any:
        """The scratch state `encode_scratch` stored (`scratch_codec = "custom"`)."""
        return data

    def vote(
        self,
        level: str,
        count: int,
        key: str,
        message: str,
        evidence: tuple[int, ...] = (),
        code: str = "",
    ) -> Vote:
        """A vote from this detector (a plain tuple: `Vote(...)` costs three times as much)."""
        fields = (self.id, level, count, f"{self.id}:{key}", message, evidence, code)
        return tuple.__new__(Vote, fields)  # type: ignore[no-any-return]


def option_defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`{option: default}` of the top-level properties of an options schema (fresh copies)."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    return {
        key: copy.deepcopy(prop["default"])
        for key, prop in (properties or {}).items()
        if isinstance(prop, Mapping) and "default" in prop
    }


def thresholds(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The `loop_detection` block of an effective rules dict (already repaired), over the
    bundled defaults: `rules/default.yaml` is the one source of the shared settings' defaults."""
    return {**(default("loop_detection") or {}), **(config.get("loop_detection") or {})}


def setting(config: Mapping[str, Any], dotted: str) -> Any:
    """A shared setting by dotted path (`loop_detection.post_compaction_guard.window_size`):
    the effective rules' value, else the bundled default (None when neither has one)."""
    value: Any = config
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return default(dotted) if value is None else value


def short(digest: bytes) -> str:
    """A short printable form of a digest, for stable vote keys."""
    return digest[-16:].hex()[:12]
