"""doom_loop_fuzzy — nearly the same long call over and over within one turn (SPEC §3.7).

On by default, independent of `loop_detection.enabled`. For calls whose
canonical argument text has at least `min_chars` (50) characters, it compares
the text with every call of the same tool among the last `window` (6) calls of
the current turn (itself included) by the Jaccard similarity of their sets of
character 3-grams. Calls of `exempt` tools are neither checked nor recorded.

- breaker when `threshold` (3) calls, the current one included, reach
  similarity `similarity` (0.8).

Options: `window` (6), `threshold` (3), `min_chars` (50), `similarity` (0.8),
`exempt` (`[check_background_tasks]`).

Flagged: three `write_file` calls in one turn whose 2 KB contents differ by one
line -> breaker on the third. Not flagged: short arguments under `min_chars`
(the exact detector covers them); three writes of unrelated contents.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from loopguard.decision import Vote
from loopguard.detector import Detector, short
from loopguard.grams import grams, similar
from loopguard.history import Call, SessionState
from loopguard.hookspecs import hookimpl
from loopguard.window import TurnWindow

from .doom_loop_exact import WINDOW_OPTIONS


class DoomLoopFuzzy(Detector):
    id = "doom_loop_fuzzy"
    levels = ("breaker",)
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            **WINDOW_OPTIONS,
            "min_chars": {"type": "integer", "minimum": 0},
            "similarity": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "additionalProperties": False,
    }

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        return (int(options.get("window", 6)), int(options.get("threshold", 3)),
                int(options.get("min_chars", 50)), float(options.get("similarity", 0.8)),
                frozenset(options.get("exempt") or ()))

    def _window(self, state: SessionState, call: Call, size: int) -> TurnWindow:
        """This turn's earlier calls as (tool, grams or short text, seq), at most `size - 1`."""
        return TurnWindow.of(state, self.id, call.turn, size - 1)

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        size, threshold, min_chars, similarity, exempt = cfg
        if call.tool in exempt:
            return None
        kept = self._window(state, call, size)
        if len(call.canonical) < min_chars:
            # Never checked itself but still compared against: kept as text (short, so
            # cheap), its grams built on demand.
            kept.push((call.tool, call.canonical, call.seq))
            return None
        mine = grams(call.canonical)
        matched = [call.seq] if len(mine) else []  # a call is as similar as it gets to itself
        for tool, other, seq in reversed(kept.items):
            if len(matched) >= threshold:
                break  # enough evidence: the rest cannot change the vote
            if tool != call.tool:
                continue
            if isinstance(other, str):  # a short text, kept as is: its grams are cheap
                other = grams(other)
            if similar(mine, other, similarity):
                matched.append(seq)
        kept.push((call.tool, mine, call.seq))  # its own window: recording here saves a pass
        if len(matched) < threshold:
            return None
        return self.vote("breaker", len(matched), short(call.digest),
                         f"{call.tool} was called {len(matched)} times with nearly the same "
                         f"arguments (similarity >= {similarity:g}) in the last {size} calls "
                         "of this turn.", tuple(sorted(matched)))


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [DoomLoopFuzzy()]
