"""doom_loop_exact — the same call again, telling the agent nothing new.

On by default, independent of `loop_detection.enabled`. It keeps the last
`window` calls (all tools mixed; calls of `exempt` tools are neither checked
nor recorded) of the session (`scope: session`, the default) or of the
current user turn (`scope: turn`). Calls that one model response asked for
together (one round, see `Session.begin_round`) never count as repeats of one
another: the model had not seen their results. Two identical calls in one
round get at most a warning.

With `outcome: same` (the default) a repeat counts only when it brought no new
information. Walking back from the current call over earlier calls with the
same tool and arguments:

- each must have returned the same outcome as the newest of them — failures
  compared digit-blind (the same error with another line number is the same
  failure), a blocked call counting as the outcome it blocked, and two
  back-to-back identical calls whose results are near-equal (`similarity` of
  their line sets, digits blinded) counting as equal unless they report
  progress;
- successes must be back to back (any other call in between may have changed
  what the repeat will see: a re-run test after an edit is not a loop);
  failures of the call itself may have other calls between them, anywhere in
  the window and across user turns (retrying the same failing call after a
  `think` or a user message is still the same failing call);
- a poll (a result that reports progress, a tool whose name says it polls, or
  a declared `known_poll_no_progress.poll_tools` call) needs
  `poll_threshold` unchanged results instead of `threshold`.

The call that would make `threshold` (3) such occurrences gets a `level`
(critical) vote. With `outcome: any` (SPEC §3.6 as written, used by
`builtin:portfolio`) outcomes are ignored: `threshold` occurrences of the same
call among the last `window` calls vote.

Options: `window` (8), `threshold` (3), `poll_threshold` (6), `similarity`
(0.8), `outcome` (`same` | `any`), `scope` (`session` | `turn`), `level`
(`critical` | `breaker`), `exempt` (`[check_background_tasks]`).

Flagged: `book(x)` failing with `Error: payment does not add up`, `think(...)`,
`book(x)` with the same error, a user message, `book(x)` -> critical on the
third `book`. Not flagged: `pytest` -> 3 failed, `edit(a)`, `pytest` -> 3
failed, `edit(b)`, `pytest` -> 3 failed (other work between successes); a
status poll whose `progress` rises; three identical reads in one response.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from loopguard.decision import Vote
from loopguard.detector import Detector, short
from loopguard.history import VETO, Call, SessionState
from loopguard.hookspecs import hookimpl
from loopguard.outcomes import NEAR_MAX_CHARS, OutcomeReader, near_equal
from loopguard.polls import PollMatcher
from loopguard.window import Item, TurnWindow, veto_of

WINDOW_OPTIONS: dict[str, Any] = {
    "window": {"type": "integer", "minimum": 1, "maximum": 1000},
    "threshold": {"type": "integer", "minimum": 1},
    "exempt": {"type": "array", "items": {"type": "string", "minLength": 1}},
    "outcome": {"enum": ["same", "any"]},
    "scope": {"enum": ["session", "turn"]},
    "level": {"enum": ["critical", "breaker"]},
}


class DoomLoopExact(Detector):
    id = "doom_loop_exact"
    levels = ("warn", "critical", "breaker")
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            **WINDOW_OPTIONS,
            "poll_threshold": {"type": "integer", "minimum": 1},
            "similarity": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "additionalProperties": False,
    }

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        return {
            "window": int(options.get("window", 8)),
            "threshold": int(options.get("threshold", 3)),
            "poll_threshold": int(options.get("poll_threshold", 6)),
            "similarity": float(options.get("similarity", 0.8)),
            "same": options.get("outcome", "same") == "same",
            "turn_scope": options.get("scope", "session") == "turn",
            "level": options.get("level", "critical"),
            "exempt": frozenset(options.get("exempt") or ()),
            "reader": OutcomeReader(config),
            "polls": PollMatcher.from_config(config),
        }

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        if call.tool in cfg["exempt"]:
            return None
        window = TurnWindow.of(state, self.id, call.turn if cfg["turn_scope"] else 0, cfg["window"] - 1)
        items = window.items
        if cfg["same"]:
            vote = self._same(call, state, items, cfg)
        else:
            vote = self._any(call, items, cfg)
        window.push(Item(call.digest, call.seq, call.round, call.run_id))
        return vote

    def _any(self, call: Call, items: list[Item], cfg: Any) -> Vote | None:
        """SPEC §3.6: the same call `threshold` times in the window, outcomes ignored."""
        earlier = [it.seq for it in items if it.digest == call.digest and it.round != call.round]
        count = len(earlier) + 1
        if count < cfg["threshold"]:
            return self._batch_warning(call, items)
        return self.vote(cfg["level"], count, short(call.digest),
                         f"{call.tool} was called {count} times with the same arguments in the "
                         f"last {cfg['window']} calls.", (*earlier, call.seq))

    def _same(self, call: Call, state: SessionState, items: list[Item], cfg: Any) -> Vote | None:
        """Walk back over earlier occurrences while they brought nothing new."""
        seqs = [call.seq]
        ref: bytes | None = None
        later = len(items)  # index of the newest counted occurrence (the current call: past the end)
        failed = poll = False
        for i in range(len(items) - 1, -1, -1):
            item = items[i]
            if item.digest != call.digest or item.run_id != call.run_id:
                continue
            if item.round == call.round:
                continue  # asked for in the same response: not a repeat
            shape = item.shape if item.shape is not None else veto_of(state, item.seq)
            if shape is None:
                break  # still running: nothing known yet
            if shape != VETO:  # a blocked call counts as the outcome it blocked
                if ref is None:
                    ref, failed = shape, item.failed
                    poll = item.status or cfg["polls"].matches(call.tool, call.args)
                elif shape != ref:
                    break
            if later - i > 1 and not (item.failed or (shape == VETO and failed)):
                break  # other work happened between two successes
            seqs.append(item.seq)
            later = i
        count = len(seqs)
        if ref is None or count < (cfg["poll_threshold"] if poll else cfg["threshold"]):
            return self._batch_warning(call, items)
        what = ("failed the same way" if failed else
                "was polled with no change in its result" if poll else "returned the same result")
        return self.vote(cfg["level"], count, short(call.digest),
                         f"{call.tool} was called {count} times with the same arguments and {what} "
                         "each time.", tuple(sorted(seqs)))

    def _batch_warning(self, call: Call, items: list[Item]) -> Vote | None:
        """Identical calls inside one response: a warning at most."""
        same = [it.seq for it in items if it.round == call.round and it.digest == call.digest]
        if not same:
            return None
        return self.vote("warn", len(same) + 1, "batch:" + short(call.digest),
                         f"{call.tool} was asked for {len(same) + 1} times with the same arguments "
                         "in one response.", (*same, call.seq))

    def after(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        """Remember what the call's outcome means for later repeats."""
        window: TurnWindow | None = state.scratch.get(self.id)
        if window is None or not cfg["same"] or call.outcome is None:
            return None
        items = window.items
        i = len(items) - 1
        while i >= 0 and items[i].seq != call.seq:
            i -= 1
        if i < 0:
            return None
        item, text = items[i], call.text
        item.failed, item.status, shape = cfg["reader"].read(call)
        prev = items[i - 1] if i else None
        if (prev is not None and prev.shape is not None and shape != prev.shape
                and prev.digest == item.digest and prev.round != item.round
                and not (item.failed or prev.failed or item.status or prev.status)
                and window.last_seq == prev.seq and window.last_text is not None and text is not None
                and near_equal(window.last_text, text, cfg["similarity"])):
            shape = prev.shape  # the same output give or take a counter: nothing new
        item.shape = shape
        window.last_seq = call.seq
        window.last_text = text if text is not None and len(text) <= NEAR_MAX_CHARS else None
        return None


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [DoomLoopExact()]
