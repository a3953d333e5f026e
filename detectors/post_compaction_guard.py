"""post_compaction_guard — redoing the same thing right after a context compaction.

Runs unless `loop_detection.enabled` is explicitly false (also when the
rolling detectors are off). `session.compacted()` arms it and clears its
window; the next `window_size` (3) completed calls (in this turn or later ones) are observed as
(tool, arguments, result) triples, then it disarms whatever happened.

- breaker with code `compaction_loop_persisted` when the same triple fills
  the whole window — so it fires on the last observation only, and never
  while results change.

Options: `enabled`; the size is `loop_detection.post_compaction_guard.window_size`.

Flagged: after a compaction, `build()` failing with the same error 3 times ->
breaker on the third result. Not flagged: the same three calls with
different results; identical calls that were not preceded by a compaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from loopguard.detectors.support import NO_OPTIONS
from loopguard.plugin import (
    UNLESS_DISABLED,
    Call,
    Detector,
    SessionState,
    Vote,
    hookimpl,
    setting,
    short,
)

_WINDOW = "loop_detection.post_compaction_guard.window_size"


class PostCompactionGuard(Detector):
    id = "post_compaction_guard"
    levels = ("breaker",)
    gating = UNLESS_DISABLED
    openclaw_name = "postCompactionGuard"
    settings = (_WINDOW,)
    scratch_codec = "custom"  # its window holds digests (bytes)
    options_schema: ClassVar[dict[str, Any]] = NO_OPTIONS

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        return max(1, int(setting(config, _WINDOW)))

    def compacted(self, state: SessionState, cfg: Any) -> None:
        state.scratch[self.id] = []  # armed, with an empty window

    def encode_scratch(self, value: Any) -> Any:
        """The armed window: (tool, digest, outcome, seq) items, bytes as hex."""
        if not isinstance(value, list):
            return None
        return [[t, _hex(d), _hex(o), s] for t, d, o, s in value]

    def decode_scratch(self, data: Any) -> Any:
        return [(t, _unhex(d), _unhex(o), int(s)) for t, d, o, s in data]

    def after(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        window = state.scratch.get(self.id)
        if window is None:
            return None
        window.append((call.tool, call.digest, call.outcome, call.seq))
        if len(window) < cfg:
            return None
        del state.scratch[self.id]  # disarm after `window_size` observations
        first = window[0][:3]
        if any(item[:3] != first for item in window[1:]):
            return None
        return self.vote(
            "breaker",
            len(window),
            short(call.digest),
            f"compaction_loop_persisted: {call.tool} repeated the same call with the "
            f"same result {len(window)} times right after a context compaction.",
            tuple(item[3] for item in window),
            code="compaction_loop_persisted",
        )


def _hex(value: bytes | None) -> str | None:
    return None if value is None else value.hex()


def _unhex(value: Any) -> bytes | None:
    return None if value is None else bytes.fromhex(value)


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [PostCompactionGuard()]
