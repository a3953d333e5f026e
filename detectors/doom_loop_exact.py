"""doom_loop_exact — the same call over and over within one turn (SPEC §3.6).

On by default, independent of `loop_detection.enabled`. It looks at the last
`window` (6) calls of the current user turn, all tools mixed, the current
call included; calls of `exempt` tools are neither checked nor recorded.

- breaker when the same tool with the same arguments occurs `threshold` (3)
  times in that window, the current call included.

Options: `window` (6), `threshold` (3), `exempt` (`[check_background_tasks]`).

Flagged: `search({"q": "x"})`, `read(a)`, `search({"q": "x"})`,
`search({"q": "x"})` in one turn -> breaker on the third search.
Not flagged: the same search once per turn over three turns; three
`check_background_tasks` calls (exempt); `search` and `lookup` with the same
arguments (another tool).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from loopguard.decision import Vote
from loopguard.detector import Detector, short
from loopguard.history import Call, SessionState
from loopguard.hookspecs import hookimpl
from loopguard.window import TurnWindow

WINDOW_OPTIONS: dict[str, Any] = {
    "window": {"type": "integer", "minimum": 1, "maximum": 1000},
    "threshold": {"type": "integer", "minimum": 1},
    "exempt": {"type": "array", "items": {"type": "string", "minLength": 1}},
}


class DoomLoopExact(Detector):
    id = "doom_loop_exact"
    levels = ("breaker",)
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object", "properties": dict(WINDOW_OPTIONS), "additionalProperties": False,
    }

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        window = int(options.get("window", 6))
        return window, int(options.get("threshold", 3)), frozenset(options.get("exempt") or ())

    def _window(self, state: SessionState, call: Call, size: int) -> TurnWindow:
        """This turn's earlier calls as (digest, seq), at most `size - 1` of them."""
        return TurnWindow.of(state, self.id, call.turn, size - 1)

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        size, threshold, exempt = cfg
        if call.tool in exempt:
            return None
        window = self._window(state, call, size)
        earlier = [seq for digest, seq in window.items if digest == call.digest]
        window.push((call.digest, call.seq))  # its own window: recording here saves a pass
        count = len(earlier) + 1
        if count < threshold:
            return None
        return self.vote("breaker", count, short(call.digest),
                         f"{call.tool} was called {count} times with the same arguments in the "
                         f"last {size} calls of this turn.", (*earlier, call.seq))


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [DoomLoopExact()]
