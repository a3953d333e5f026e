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

Options (their defaults are in the options schema): `min_length`, `max_length`, `level`,
`exempt`.

Flagged: `open(a)` -> A, `search(x)` -> S, `goto(5)` -> G, `open(a)` -> A,
`search(x)` -> S, `goto(5)` -> G, then `open(a)` -> critical. Not flagged: the
same three calls when the second `search(x)` found something new; a cycle
broken by any other call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from loopguard.plugin import VETO, Call, Detector, HistoryEntry, SessionState, Vote, hookimpl, short


class Cycle(Detector):
    id = "cycle"
    levels = ("critical", "breaker")
    reads_outcomes = True
    repeats_only = True
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "min_length": {
                "description": "Shortest cycle of distinct calls looked for.",
                "type": "integer",
                "minimum": 2,
                "maximum": 32,
                "default": 2,
            },
            "max_length": {
                "description": "Longest cycle looked for.",
                "type": "integer",
                "minimum": 2,
                "maximum": 32,  # 2 rounds: history.RECENT
                "default": 10,
            },
            "level": {
                "description": "The vote when a cycle comes round again with the same "
                "outcomes: critical blocks, breaker ends the run.",
                "enum": ["critical", "breaker"],
                "default": "critical",
            },
            "exempt": {
                "description": "Tools left out of cycles.",
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "default": ["check_background_tasks"],
            },
        },
        "additionalProperties": False,
    }

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        merged = {**self.option_defaults(), **options}
        low = int(merged["min_length"])
        high = max(low, int(merged["max_length"]))
        return low, high, merged["level"], frozenset(merged["exempt"] or ())

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        low, high, level, exempt = cfg
        if call.tool in exempt:
            return None
        digests = state.digests
        near = digests[-2 * high :]
        seen = near.count(call.digest)
        if seen == 0 or seen == len(near):
            return None  # a cycle needs this call among the recent ones, and some other call
        recent: list[HistoryEntry] = []  # the newest calls, newest first, grown as lengths need
        for entry in reversed(state.history):
            if entry.tool in exempt:
                continue
            if not recent and digests.count(entry.digest) < 2:
                return None  # a cycle repeats the newest call too: one C-level count rules most out
            recent.append(entry)
            size = len(recent)
            if size & 1 or size < 2 * low:
                continue
            length = size >> 1
            if (
                entry.digest == call.digest
                and entry.round != call.round
                and self._repeated(call, recent, length)
            ):
                seqs = (*[e.seq for e in reversed(recent)], call.seq)
                return self.vote(
                    level,
                    2 * length + 1,
                    f"{length}:" + short(call.digest),
                    f"a cycle of {length} calls starting with {call.tool} went round "
                    "twice with the same results and is starting again.",
                    seqs,
                )
            if length >= high:
                break
        return None

    @staticmethod
    def _repeated(call: Call, recent: list[HistoryEntry], length: int) -> bool:
        """The two newest rounds of `length` calls match position by position, unchanged."""
        distinct = False
        for k in range(length):
            newer, older = recent[k], recent[k + length]
            if newer.digest != older.digest or newer.round == older.round:
                return False
            if newer.run_id != call.run_id or older.run_id != call.run_id:
                return False
            was = older.shape if older.shape is not None else older.outcome
            now = newer.shape if newer.shape is not None else newer.outcome
            if was is None or now is None or (was != now and VETO not in (was, now)):
                return False
            distinct = distinct or newer.digest != call.digest
        return distinct


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [Cycle()]
