"""Turns the votes on one call into one decision.

Highest level wins; ties go to the detector listed first in
`aggregator.order`. Escalation: the Nth critical decision in one run of a
session becomes a breaker (`aggregator.escalate_criticals`, 0 = off).
Warnings notify the model once per key and then once per `warn_every` bucket
(`aggregator.warn_notes: false` keeps them out of the model's view). Every
non-allow decision is logged on the `loopguard.decisions` logger: warn at
WARNING, critical and breaker at ERROR.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from loopguard.decision import RANK, Decision, Vote
from loopguard.rules import default
from loopguard.state.history import Call, SessionState
from loopguard.text import messages, templates

_MAX_WARN_KEYS = 512  # bound on remembered warning keys per session
_MAX_RUNS = 64  # runs whose critical counts a session remembers (escalation is per run)
_MAX_RANKS = 256  # (level, detector) sort keys remembered per policy
decision_log = logging.getLogger("loopguard.decisions")
_new_decision = tuple.__new__  # Decision(*fields) without the keyword handling or `_make`'s check
_TEMPLATE_KEYS = {"warn": "warn_note", "critical": "blocked", "breaker": "breaker"}  # by action


def _log_has_handlers() -> bool:
    """Whether a real handler would receive decision logs (building a record costs ~3 µs)."""
    logger: logging.Logger | None = decision_log
    while logger is not None:
        for handler in logger.handlers:
            if not isinstance(handler, logging.NullHandler):
                return True
        if not logger.propagate:
            return False
        logger = logger.parent
    return False


def log_decision(
    action: str, tool: str, seq: int, turn: int, message: str, detector: str, count: int
) -> None:
    """Log a non-allow decision on `loopguard.decisions`: warn at WARNING, else ERROR."""
    if _log_has_handlers() and decision_log.isEnabledFor(logging.WARNING):  # (often none)
        decision_log.log(
            logging.WARNING if action == "warn" else logging.ERROR,
            "%s %s (seq %d, turn %d): %s [%s, count %d]",
            action,
            tool,
            seq,
            turn,
            message,
            detector,
            count,
        )


class Aggregator:
    """Compiled once per policy from the `aggregator` block."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        block = config.get("aggregator") or {}
        self.order = {name: i for i, name in enumerate(block.get("order") or ())}
        self.escalate = int(
            block.get("escalate_criticals", default("aggregator.escalate_criticals")) or 0
        )
        self.warn_every = max(
            1, int(block.get("warn_every", default("aggregator.warn_every")) or 1)
        )
        self.fail_closed = block.get("fail_mode", default("aggregator.fail_mode")) == "closed"
        self.warn_notes = block.get("warn_notes", default("aggregator.warn_notes")) is not False
        self.config = config
        self._templates: dict[tuple[str, str], str] = {}  # (key, language) -> template
        self._language: str | None = None  # for a session with no user text yet (see `_fill`)
        self._ranks: dict[tuple[str, str], tuple[int, int]] = {}  # (level, detector) -> rank

    def rank(self, vote: Vote) -> tuple[int, int]:
        """Sort key: higher level first, then rules order (unknown ids last)."""
        key = self._ranks.get((vote.level, vote.detector))
        if key is None:
            key = (-RANK.get(vote.level, 0), self.order.get(vote.detector, len(self.order)))
            if len(self._ranks) < _MAX_RANKS:  # (plugins may vote under any id: bounded)
                self._ranks[(vote.level, vote.detector)] = key
        return key

    def decide(
        self,
        call: Call,
        votes: Sequence[Vote],
        faults: Sequence[str],
        state: SessionState,
        phase: str,
    ) -> Decision:
        """The decision for `call` (one vote at least: see `decision.allowed` for none);
        updates escalation and warning state."""
        ordered = (votes[0],) if len(votes) == 1 else tuple(sorted(votes, key=self.rank))
        top = ordered[0]
        action, detector = top.level, top.detector
        text: str | None = None
        escalated = notify = False
        if action == "critical":
            count = state.criticals.pop(call.run_id, 0) + 1
            state.criticals[call.run_id] = count  # newest last: the oldest runs are dropped
            if len(state.criticals) > _MAX_RUNS:
                del state.criticals[next(iter(state.criticals))]
            if self.escalate and count >= self.escalate:
                action, escalated = "breaker", True
        elif action == "warn":
            notify = self._should_notify(state, top) and self.warn_notes
        log_decision(action, call.tool, call.seq, call.turn, top.message, detector, top.count)
        if action != "warn" or notify:
            message = top.message
            if escalated:
                blocked = state.criticals[call.run_id]
                message += f" (blocked {blocked} times in this run: escalated to breaker)"
            fields = {
                "message": message,
                "detector": detector,
                "count": top.count,
                "tool": call.tool,
            }
            text = self._fill(state, _TEMPLATE_KEYS[action], fields)
        return _new_decision(
            Decision,
            (
                action,
                ordered,
                text,
                call.tool,
                call.call_id,
                call.seq,
                call.turn,
                call.run_id,
                phase,
                detector,
                escalated,
                notify,
                tuple(faults),
            ),
        )

    def _should_notify(self, state: SessionState, vote: Vote) -> bool:
        bucket = vote.count // self.warn_every
        last = state.warned.get(vote.key)
        if last is not None and bucket <= last:
            return False
        if last is None and len(state.warned) >= _MAX_WARN_KEYS:
            state.warned.clear()
        state.warned[vote.key] = bucket
        return True

    def render(self, state: SessionState, key: str, **fields: Any) -> str:
        """A message template in the session's language (templates looked up once per policy)."""
        return self._fill(state, key, fields)

    def _fill(self, state: SessionState, key: str, fields: dict[str, Any]) -> str:
        """`render` with the fields as one dict (a blocked call renders on the hot path)."""
        lang = state.lang
        if not lang:  # no user text seen yet: the policy's language for no text, found once
            lang = self._language
            if lang is None:
                lang = self._language = messages.language(self.config, "")
        template = self._templates.get((key, lang))
        if template is None:
            template = self._templates[(key, lang)] = messages.template(self.config, key, lang)
        return templates.fill(template, fields)

    def fault_vote(self, detector_id: str, source: str, error: str) -> Vote | None:
        """With `fail_mode: closed`, a failing detector votes critical."""
        if not self.fail_closed:
            return None
        return Vote(
            detector_id,
            "critical",
            0,
            f"{detector_id}:fault",
            f"detector {source} failed ({error}); fail_mode is closed",
            (),
            "detector_fault",
        )
