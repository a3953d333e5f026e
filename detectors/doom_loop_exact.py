"""doom_loop_exact — the same call again, telling the agent nothing new.

On by default, independent of `loop_detection.enabled`. It keeps the last
`window` calls (all tools mixed; calls of `exempt` tools are neither checked
nor recorded) of the session (`scope: session`, the default) or of the
current user turn (`scope: turn`). Calls that one model response asked for
together (one round, see `Session.begin_round`) never count as repeats of one
another: the model had not seen their results. Two identical calls in one
round get at most a warning, and count as one occurrence for later calls.

With `outcome: same` (the default) a repeat counts only when it brought no new
information. Walking back from the current call over earlier calls with the
same tool and arguments:

- each must have returned the same outcome as the newest of them — failures
  compared digit-blind (the same error with another line number is the same
  failure), a blocked call counting as the outcome it blocked, and two
  back-to-back identical calls whose results are near-equal
  (`outcomes.near_similarity` of their line sets, digits blinded) counting as
  equal unless they report progress;
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

Options: `window` (8), `threshold` (3), `poll_threshold` (6), `outcome`
(`same` | `any`), `scope` (`session` | `turn`), `level` (`critical` |
`breaker`), `exempt` (`[check_background_tasks]`).

Flagged: `book(x)` failing with `Error: payment does not add up`, `think(...)`,
`book(x)` with the same error, a user message, `book(x)` -> critical on the
third `book`. Not flagged: `pytest` -> 3 failed, `edit(a)`, `pytest` -> 3
failed, `edit(b)`, `pytest` -> 3 failed (other work between successes); a
status poll whose `progress` rises; three identical reads in one response.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from loopguard.plugin import (
    FAILED,
    STATUS,
    VETO,
    Call,
    Detector,
    PollMatcher,
    SessionState,
    Vote,
    hookimpl,
    short,
)


def window_options(window: int) -> dict[str, Any]:
    """The options shared by the doom-loop detectors, with their defaults (`window` differs)."""
    return {
        "window": {
            "description": "How many recent calls are looked at (the current one included).",
            "type": "integer",
            "minimum": 1,
            "maximum": 64,  # history.RECENT: "seen lately"
            "default": window,
        },
        "threshold": {
            "description": "Occurrences in the window (the current call included) that "
            "make a doom loop.",
            "type": "integer",
            "minimum": 1,
            "default": 3,
        },
        "exempt": {
            "description": "Tools this detector never judges (and skips in its window).",
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "default": ["check_background_tasks"],
        },
        "outcome": {
            "description": "same: repeats count only with the same outcome; any: the same "
            "arguments are enough.",
            "enum": ["same", "any"],
            "default": "same",
        },
        "scope": {
            "description": "session: the window spans user turns; turn: it restarts each turn.",
            "enum": ["session", "turn"],
            "default": "session",
        },
        "level": {
            "description": "The vote when it trips: critical blocks the call with a message "
            "(repeated criticals escalate); breaker ends the run.",
            "enum": ["critical", "breaker"],
            "default": "critical",
        },
    }


def window_config(options: Mapping[str, Any]) -> dict[str, Any]:
    """The compiled `window_options` (`options` already holds every default)."""
    return {
        "window": int(options["window"]),
        "threshold": int(options["threshold"]),
        "same": options["outcome"] == "same",
        "turn_scope": options["scope"] == "turn",
        "level": options["level"],
        "exempt": frozenset(options["exempt"] or ()),
    }


class DoomLoopExact(Detector):
    id = "doom_loop_exact"
    levels = ("warn", "critical", "breaker")
    reads_outcomes = True
    repeats_only = True  # (with outcome: any too: a first occurrence never votes)
    settings = ("outcomes.near_similarity",)
    bounded_by = (("threshold", "window"),)
    explain_options = (
        "outcome",
        "scope",
        "window",
        "threshold",
        "poll_threshold",
        "level",
        "exempt",
    )
    options_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            **window_options(8),
            "poll_threshold": {
                "description": "The threshold for polls (results that report "
                "progress), which may wait longer.",
                "type": "integer",
                "minimum": 1,
                "default": 6,
            },
        },
        "additionalProperties": False,
    }

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        merged = {**self.option_defaults(), **options}
        return {
            **window_config(merged),
            "poll_threshold": int(merged["poll_threshold"]),
            "polls": PollMatcher.from_config(config),
        }

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        exempt = cfg["exempt"]
        if call.tool in exempt:
            return None
        # Walk the window's earlier calls, newest first: the last `window - 1` calls of the
        # session (of the turn with `scope: turn`), calls of exempt tools skipped.
        digest, turn, turn_scope = call.digest, call.turn, cfg["turn_scope"]
        same = cfg["same"]
        left = cfg["window"] - 1
        seqs = [call.seq]  # the current call and the earlier occurrences counted
        batch: list[int] = []  # identical calls asked for in the same response
        ref: bytes | None = None
        gap = 0  # calls since the newest counted occurrence (or the current call)
        failed = False
        poll: bool | None = (
            False  # None: known only as "not a status", a declared poll is asked when it matters
        )
        counted_round = -1
        for entry in reversed(state.history):
            if left <= 0 or (turn_scope and entry.turn != turn):
                break
            if entry.tool in exempt:
                continue
            left -= 1
            if entry.digest != digest or (same and entry.run_id != call.run_id):
                gap += 1
                continue
            if entry.round == call.round:
                batch.append(entry.seq)
                gap += 1
                continue
            if entry.round == counted_round:
                continue  # one response asking twice is one occurrence
            if not same:  # SPEC §3.6: every occurrence in the window counts
                seqs.append(entry.seq)
                counted_round = entry.round
                continue
            outcome = entry.shape if entry.shape is not None else entry.outcome
            if outcome is None:
                break  # still running: nothing known yet
            if outcome != VETO:  # a blocked call counts as the outcome it blocked
                if ref is None:
                    ref, failed = outcome, bool(entry.flags & FAILED)
                    poll = True if entry.flags & STATUS else None
                elif outcome != ref:
                    break
            if gap and not (entry.flags & FAILED or (outcome == VETO and failed)):
                break  # other work happened between two successes
            seqs.append(entry.seq)
            counted_round = entry.round
            gap = 0
            if ref is not None:
                if poll is None:
                    poll = cfg["polls"].matches(call.tool, call.args)
                if len(seqs) >= (cfg["poll_threshold"] if poll else cfg["threshold"]):
                    break  # enough: a vote needs no more evidence than its threshold
        count = len(seqs)
        if poll is None:  # below both thresholds it cannot matter (the usual "other work between")
            poll = count >= min(cfg["threshold"], cfg["poll_threshold"]) and cfg["polls"].matches(
                call.tool, call.args
            )
        needed = cfg["poll_threshold"] if poll else cfg["threshold"]
        if count < needed or (same and ref is None):
            return self._batch_warning(call, batch) if batch else None
        if not same:
            what = f"in the last {cfg['window']} calls"
        else:
            what = (
                "and "
                + (
                    "failed the same way"
                    if failed
                    else "was polled with no change in its result"
                    if poll
                    else "returned the same result"
                )
                + " each time"
            )
        return self.vote(
            cfg["level"],
            count,
            short(digest),
            f"{call.tool} was called {count} times with the same arguments {what}.",
            tuple(reversed(seqs)),
        )

    def _batch_warning(self, call: Call, batch: list[int]) -> Vote | None:
        """Identical calls inside one response: a warning at most."""
        if not batch:
            return None
        return self.vote(
            "warn",
            len(batch) + 1,
            "batch:" + short(call.digest),
            f"{call.tool} was asked for {len(batch) + 1} times with the same arguments "
            "in one response.",
            (*reversed(batch), call.seq),
        )


@hookimpl
def loopguard_register_detectors() -> list[Detector]:
    return [DoomLoopExact()]
