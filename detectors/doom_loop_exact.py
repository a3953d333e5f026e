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
from loopguard.history import FAILED, STATUS, VETO, Call, HistoryEntry, SessionState
from loopguard.hookspecs import hookimpl
from loopguard.outcomes import NEAR_MAX_CHARS, near_equal
from loopguard.polls import PollMatcher

WINDOW_OPTIONS: dict[str, Any] = {
    "window": {"type": "integer", "minimum": 1, "maximum": 1000},
    "threshold": {"type": "integer", "minimum": 1},
    "exempt": {"type": "array", "items": {"type": "string", "minLength": 1}},
    "outcome": {"enum": ["same", "any"]},
    "scope": {"enum": ["session", "turn"]},
    "level": {"enum": ["critical", "breaker"]},
}


def window_entries(state: SessionState, call: Call, size: int, exempt: frozenset[str],
                   turn_scope: bool) -> list[HistoryEntry]:
    """The last `size - 1` earlier calls (newest first) that a window of `size` holds.

    Calls of `exempt` tools are skipped; with `turn_scope`, only calls of the current turn.
    """
    found: list[HistoryEntry] = []
    limit = size - 1
    for entry in reversed(state.history):
        if len(found) >= limit or (turn_scope and entry.turn != call.turn):
            break
        if entry.tool not in exempt:
            found.append(entry)
    return found


class DoomLoopExact(Detector):
    id = "doom_loop_exact"
    levels = ("warn", "critical", "breaker")
    reads_outcomes = True
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
            "polls": PollMatcher.from_config(config),
        }

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        if call.tool in cfg["exempt"] or call.digest not in state.digests:
            return None  # never seen lately: no repeat (one C-level scan)
        earlier = window_entries(state, call, cfg["window"], cfg["exempt"], cfg["turn_scope"])
        return self._same(call, earlier, cfg) if cfg["same"] else self._any(call, earlier, cfg)

    def _any(self, call: Call, earlier: list[HistoryEntry], cfg: Any) -> Vote | None:
        """SPEC §3.6: the same call `threshold` times in the window, outcomes ignored."""
        seqs = [e.seq for e in earlier if e.digest == call.digest and e.round != call.round]
        count = len(seqs) + 1
        if count < cfg["threshold"]:
            return self._batch_warning(call, earlier)
        return self.vote(cfg["level"], count, short(call.digest),
                         f"{call.tool} was called {count} times with the same arguments in the "
                         f"last {cfg['window']} calls.", (*reversed(seqs), call.seq))

    def _same(self, call: Call, earlier: list[HistoryEntry], cfg: Any) -> Vote | None:
        """Walk back over earlier occurrences while they brought nothing new."""
        seqs = [call.seq]
        ref: bytes | None = None
        gap = 0  # calls since the newest counted occurrence (or the current call)
        failed = poll = False
        for entry in earlier:
            if entry.digest != call.digest or entry.run_id != call.run_id or entry.round == call.round:
                gap += 1  # other work, another run, or asked for in the same response
                continue
            outcome = entry.same_as
            if outcome is None:
                break  # still running: nothing known yet
            if outcome != VETO:  # a blocked call counts as the outcome it blocked
                if ref is None:
                    ref, failed = outcome, bool(entry.flags & FAILED)
                    poll = bool(entry.flags & STATUS) or cfg["polls"].matches(call.tool, call.args)
                elif outcome != ref:
                    break
            if gap and not (entry.flags & FAILED or (outcome == VETO and failed)):
                break  # other work happened between two successes
            seqs.append(entry.seq)
            gap = 0
        count = len(seqs)
        if ref is None or count < (cfg["poll_threshold"] if poll else cfg["threshold"]):
            return self._batch_warning(call, earlier)
        what = ("failed the same way" if failed else
                "was polled with no change in its result" if poll else "returned the same result")
        return self.vote(cfg["level"], count, short(call.digest),
                         f"{call.tool} was called {count} times with the same arguments and {what} "
                         "each time.", tuple(reversed(seqs)))

    def _batch_warning(self, call: Call, earlier: list[HistoryEntry]) -> Vote | None:
        """Identical calls inside one response: a warning at most."""
        same = [e.seq for e in earlier if e.round == call.round and e.digest == call.digest]
        if not same:
            return None
        return self.vote("warn", len(same) + 1, "batch:" + short(call.digest),
                         f"{call.tool} was asked for {len(same) + 1} times with the same arguments "
                         "in one response.", (*reversed(same), call.seq))

    def after(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        """Back-to-back identical calls with near-equal results: the second brought nothing new."""
        if not cfg["same"] or call.outcome is None:
            return None
        last = state.scratch.get(self.id)  # (seq, text) of the previous completed call
        text = call.text
        state.scratch[self.id] = (call.seq, text if text is not None and len(text) <= NEAR_MAX_CHARS
                                  else None)
        history = state.history
        if (last is None or last[1] is None or text is None or call.flags or len(history) < 2
                or history[-1].seq != call.seq):
            return None
        entry, prev = history[-1], history[-2]
        if (prev.seq == last[0] and prev.digest == entry.digest and prev.round != entry.round
                and not prev.flags and prev.same_as not in (None, VETO)
                and entry.same_as != prev.same_as and near_equal(last[1], text, cfg["similarity"])):
            entry.shape = prev.same_as  # the same output give or take a counter: nothing new
        return None


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [DoomLoopExact()]
