"""cycle — a cycle of 2 to 10 different calls going round with nothing changing.

On by default, independent of `loop_detection.enabled` (it generalises the
rolling `ping_pong` detector to longer cycles and needs outcomes). The
current call is flagged when the calls just before it are two identical
rounds of one sequence of `min_length` to `max_length` calls — the same tool
and arguments at each position, each position with the same outcome in both
rounds (failures digit-blind, as `doom_loop_exact` compares them) — and the
current call starts a third round. The sequence must hold at least two
different calls (one call repeated is `doom_loop_exact`'s). A call is never
compared with a call of the same model response (round). Calls of `exempt`
tools are neither checked nor recorded.

Options: `min_length` (2), `max_length` (10), `level` (`critical`),
`exempt` (`[check_background_tasks]`).

Flagged: `open(a)` -> A, `search(x)` -> S, `goto(5)` -> G, `open(a)` -> A,
`search(x)` -> S, `goto(5)` -> G, then `open(a)` -> critical. Not flagged: the
same three calls when the second `search(x)` found something new; a cycle
broken by any other call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from loopguard.decision import Vote
from loopguard.detector import Detector, short
from loopguard.history import VETO, Call, SessionState
from loopguard.hookspecs import hookimpl
from loopguard.outcomes import OutcomeReader
from loopguard.window import Item, TurnWindow, veto_of


class Cycle(Detector):
    id = "cycle"
    levels = ("critical", "breaker")
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "min_length": {"type": "integer", "minimum": 2, "maximum": 50},
            "max_length": {"type": "integer", "minimum": 2, "maximum": 50},
            "level": {"enum": ["critical", "breaker"]},
            "exempt": {"type": "array", "items": {"type": "string", "minLength": 1}},
        },
        "additionalProperties": False,
    }

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        low = int(options.get("min_length", 2))
        high = max(low, int(options.get("max_length", 10)))
        return (low, high, options.get("level", "critical"),
                frozenset(options.get("exempt") or ()), OutcomeReader(config))

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        low, high, level, exempt, _ = cfg
        if call.tool in exempt:
            return None
        window = TurnWindow.of(state, self.id, 0, 2 * high)
        items = window.items
        n = len(items)
        vote = None
        for length in range(low, high + 1):
            if 2 * length > n:
                break
            start = n - 2 * length
            first = items[start]
            if first.digest != call.digest or first.round == call.round:
                continue
            if self._repeated(state, call, items, start, length):
                seqs = tuple(it.seq for it in items[start:]) + (call.seq,)
                vote = self.vote(level, 2 * length + 1, f"{length}:" + short(call.digest),
                                 f"a cycle of {length} calls starting with {call.tool} went round twice "
                                 "with the same results and is starting again.", seqs)
                break
        window.push(Item(call.digest, call.seq, call.round, call.run_id))
        return vote

    @staticmethod
    def _repeated(state: SessionState, call: Call, items: list[Item], start: int, length: int) -> bool:
        """items[start:start+length] and the next `length` items are one round each, unchanged."""
        distinct = False
        for k in range(start, start + length):
            a, b = items[k], items[k + length]
            if a.digest != b.digest or a.round == b.round or a.run_id != call.run_id:
                return False
            if b.run_id != call.run_id or a.shape is None:
                return False
            shape = b.shape if b.shape is not None else veto_of(state, b.seq)
            if shape != a.shape and shape != VETO:
                return False
            distinct = distinct or a.digest != call.digest
        return distinct

    def after(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        window: TurnWindow | None = state.scratch.get(self.id)
        if window is None or call.outcome is None:
            return None
        for item in reversed(window.items):
            if item.seq == call.seq:
                item.shape = cfg[4].read(call)[2]
                break
        return None


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [Cycle()]
