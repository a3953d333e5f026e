"""doom_loop_fuzzy — nearly the same long call over and over.

Independent of `loop_detection.enabled`; off in `builtin:default` (on real
traffic, reads of neighbouring files, pages of one file and searches for
nearby airports have "similar" arguments), on in `builtin:portfolio`. For
calls whose canonical argument text has at least `min_chars` (50)
characters, it compares the text with every call of the same tool among the
last `window` (6) calls of the session (`scope: session`) or of the current
turn (`scope: turn`), itself included, by the Jaccard similarity of their
sets of character 3-grams. Calls of `exempt` tools are neither checked nor
recorded; calls of the current call's own round (one model response) are
never compared with it.

- a `level` vote (critical by default) when `threshold` (3) calls, the
  current one included, reach similarity `similarity` (0.8) — with
  `outcome: same` (the default) only when the earlier similar calls all had
  the same outcome (failures compared digit-blind), with `outcome: any`
  whatever their outcomes.

Options (their defaults are in the options schema): `window`, `threshold`, `min_chars`,
`similarity`, `outcome` (`same` | `any`), `scope` (`session` | `turn`), `level`
(`critical` | `breaker`), `exempt`.

Flagged: three `write_file` calls whose 2 KB contents differ by one line,
the first two rejected with the same error -> a vote on the third. Not
flagged: short arguments under `min_chars` (the exact detector covers them);
three writes of unrelated contents; with `outcome: same`, similar calls whose
results differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from loopguard.detectors.doom_loop_exact import EXACT, quiet
from loopguard.detectors.support.doom import window_config, window_options
from loopguard.detectors.support.grams import EPS, Sketch, judge, pack, sample, triangle, unpack
from loopguard.detectors.support.window import TurnWindow
from loopguard.plugin import (
    VETO,
    Call,
    Detector,
    SessionState,
    Vote,
    entry_of,
    hookimpl,
    short,
)

_TOOL, _GRAMS, _SEQ, _ROUND, _TARGET = range(5)  # fields of a window item (a small tuple)
_TARGET_CHARS = 200


def target_of(args: Any) -> str:
    """What a write is aimed at: its arguments but the longest text (`path` of a
    `write_file`), or, for a single text, its first line (`cat > fix2.patch << EOF`)."""
    if (type(args) is dict or isinstance(args, Mapping)) and args:  # (a dict: no ABC check)
        texts = [(len(v), k) for k, v in args.items() if isinstance(v, str)]
        if len(args) > 1 or not texts:
            longest = max(texts)[1] if texts else None
            return repr(
                sorted([(str(k), repr(v)[:_TARGET_CHARS]) for k, v in args.items() if k != longest])
            )
        args = args[max(texts)[1]]
    if isinstance(args, str):
        return args.lstrip().split("\n", 1)[0][:_TARGET_CHARS]
    return ""


class FuzzyWindow(TurnWindow):
    """The window, and what comparisons learnt about its texts (`Sketch`es by seq; never
    stored: they are rebuilt from the texts on demand; between calls without their exact gram
    sets, which are many times larger than the texts)."""

    __slots__ = ("sketches",)

    def __init__(self, turn: int, size: int) -> None:
        super().__init__(turn, size)
        self.sketches: dict[int, Sketch] | None = None  # (None while empty: idle sessions)

    def keep(self, item: Any, sketch: Sketch) -> None:
        """Push an item with its sketch, forgetting the sketches of dropped items and the exact
        gram sets of the others."""
        self.push(item)
        sketches = self.table()
        sketches[item[_SEQ]] = sketch
        self.forget()
        for kept in sketches.values():
            if kept.exact is not None or kept.codes is not None:
                kept.release()

    def table(self) -> dict[int, Sketch]:
        """The sketches by seq (made on first use)."""
        if self.sketches is None:
            self.sketches = {}
        return self.sketches

    def forget(self) -> None:
        """Drop the sketches of items no longer in the window (older than its oldest item:
        sketches exist only for items, which are kept in call order)."""
        sketches, items = self.sketches or {}, self.items
        oldest = items[0][_SEQ] if items else None
        for seq in [seq for seq in sketches if oldest is None or seq < oldest]:
            del sketches[seq]
        if not sketches:
            self.sketches = None  # (an emptied dict keeps its grown table; idle sessions keep none)


class DoomLoopFuzzy(Detector):
    id = "doom_loop_fuzzy"
    levels = ("critical", "breaker")
    reads_outcomes = True
    bounded_by = (("threshold", "window"),)
    explain_options = (
        "outcome",
        "scope",
        "window",
        "threshold",
        "min_chars",
        "similarity",
        "level",
        "exempt",
    )
    scratch_codec = "custom"  # its window keeps the (sampled) texts
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            **window_options(6),
            "min_chars": {
                "description": "Calls whose arguments are shorter (in characters) "
                "are never judged.",
                "type": "integer",
                "minimum": 0,
                "default": 1000,
            },
            "similarity": {
                "description": "Jaccard similarity of the arguments' character "
                "3-grams at which two calls count as the same.",
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "default": 0.95,
            },
        },
        "additionalProperties": False,
    }

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        merged = {**self.option_defaults(), **options}
        return {
            **window_config(merged),
            "min_chars": int(merged["min_chars"]),
            "similarity": float(merged["similarity"]),
        }

    def encode_scratch(self, value: Any) -> Any:
        """The window: [turn, size, [[tool, packed text, seq, round, target], ...]]."""
        if not isinstance(value, TurnWindow):
            return None
        return [
            value.turn,
            value.size,
            [[t, pack(g), s, r, a] for t, g, s, r, a in value.items],
        ]

    def decode_scratch(self, data: Any) -> Any:
        window = FuzzyWindow(int(data[0]), int(data[1]))
        window.items = [
            (
                item[0],
                unpack(item[1]),
                int(item[2]),
                int(item[3]),
                item[4] if len(item) > 4 else None,
            )
            for item in data[2]
        ]  # (stored before targets were kept: None, a target like any other; stored as gram
        # sets before texts were kept: compared exactly)
        return window

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        if call.tool in cfg["exempt"]:
            return None
        turn = call.turn if cfg["turn_scope"] else 0
        kept = state.scratch.get(self.id)  # (TurnWindow.of, inlined: this runs on every call)
        if kept is None or kept.turn != turn:
            kept = state.scratch[self.id] = FuzzyWindow(turn, max(cfg["window"] - 1, 0))
        elif type(kept) is not FuzzyWindow:  # a window made elsewhere: adopt its items
            adopted = FuzzyWindow(kept.turn, kept.size)
            adopted.items = kept.items
            kept = state.scratch[self.id] = adopted
        if len(call.canonical) < cfg["min_chars"]:
            # Never checked itself but still compared against: kept as text.
            items = kept.items
            items.append((call.tool, call.canonical, call.seq, call.round, None))
            if len(items) > kept.size:
                del items[0]
                if kept.sketches:
                    kept.forget()
            return None
        mine = Sketch(sample(call.canonical))
        target = target_of(call.args)
        matched = self._matches(call, state, mine, target, kept, cfg)
        # recording here saves a pass
        kept.keep((call.tool, mine.text, call.seq, call.round, target), mine)
        if len(matched) < cfg["threshold"]:
            return None
        what = " and the same outcome" if cfg["same"] else ""
        return self.vote(
            cfg["level"],
            len(matched),
            short(call.digest),
            f"{call.tool} was called {len(matched)} times with nearly the same "
            f"arguments (similarity >= {cfg['similarity']:g}){what} in the last "
            f"{cfg['window']} calls.",
            tuple(sorted(matched)),
        )

    @staticmethod
    def _matches(
        call: Call,
        state: SessionState,
        mine: Sketch,
        target: str,
        kept: FuzzyWindow,
        cfg: Any,
    ) -> list[int]:
        """The current call and the similar earlier calls (with one outcome, when `same`)."""
        matched = [call.seq] if mine.text else []  # a call is as similar as it gets to itself
        trail = state.scratch.get(EXACT)  # what doom_loop_exact noted each call could change
        ref: bytes | None = None
        threshold, enough, same = cfg["similarity"], cfg["threshold"], cfg["same"]
        tool, round_, sketches = call.tool, call.round, kept.table()
        judged: dict[int, tuple[float, float]] = {}  # seq -> interval of the similarity
        for item in reversed(kept.items):
            if len(matched) >= enough:
                break  # enough evidence: the rest cannot change the vote
            if item[_TOOL] != tool or item[_ROUND] == round_:
                continue
            seq = item[_SEQ]
            if (
                same
                and trail is not None
                and item[_TARGET] is not None
                and item[_TARGET] != target
                and not quiet(trail, seq)
            ):
                continue  # a write that worked, aimed elsewhere: new, however similar
            if not _similar(mine, seq, item[_GRAMS], sketches, judged, threshold):
                continue
            if same:
                entry = entry_of(state, seq)
                shape = None if entry is None else entry.same_as
                if shape is None:
                    break  # still running: nothing known yet
                if ref is None:
                    ref = shape
                elif shape != ref and shape != VETO:
                    break
            matched.append(seq)
        mine.links = judged
        return matched


def _similar(
    mine: Sketch,
    seq: int,
    stored: Any,
    sketches: dict[int, Sketch],
    judged: dict[int, tuple[float, float]],
    threshold: float,
) -> bool:
    """Whether the text of call `seq` is similar to the current one: from what the calls
    compared since tell about it (`triangle`), else by `judge`."""
    other = sketches.get(seq)
    if other is None:
        other = sketches[seq] = Sketch.of(stored)
    for newer, interval in judged.items():
        link = sketches[newer].links.get(seq)
        if link is not None:
            low, high = triangle(interval, link)
            if low >= threshold + EPS or high < threshold - EPS:
                judged[seq] = (low, high)
                return low >= threshold
    verdict, low, high = judge(other, mine, threshold)
    judged[seq] = (low, high)
    return verdict


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [DoomLoopFuzzy()]
