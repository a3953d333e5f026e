"""One conversation's view of the guard: the public per-call API (DESIGN §3).

Every method takes the session's lock, so a session can be shared between
threads. Work per call is proportional to the call (fingerprinting its
arguments and result) plus small, bounded detector windows — never to the
whole history or the number of sessions.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import messages as texts
from .decision import Decision, Vote
from .fingerprint import args_digest, canonical_text, error_outcome, parse_args, result_outcome
from .history import VETO, Call, HistoryEntry, SessionState, append
from .turns import RoundOutcome, TurnExpectation

if TYPE_CHECKING:
    from .guard import Guard
    from .policy import CompiledPolicy

_MAX_OPEN = 256  # calls awaiting after_call remembered per session


class Session:
    """Handle on one session's state under one compiled policy."""

    def __init__(self, guard: Guard, session_id: str, agent: str | None,
                 policy: CompiledPolicy, state: SessionState) -> None:
        self.guard = guard
        self.id = session_id
        self.agent = agent
        self._policy = policy
        self._state = state

    @property
    def config(self) -> Any:
        """The effective rules dict (merged, per-agent, repaired) of this session."""
        return self._policy.config

    @property
    def turn(self) -> int:
        return self._state.turn

    # -- turns -------------------------------------------------------------
    def begin_turn(self, messages: Sequence[Any]) -> TurnExpectation | None:
        """Start a user turn; returns the tool the model must call, if any."""
        state, policy = self._state, self._policy
        with state.lock:
            state.turn += 1
            state.tools_closed = False
            state.last_used = time.monotonic()
            if state.turn_state is None:
                state.turn_state = policy.turn_policy.new_state()
            expectation = policy.turn_policy.begin_turn(state.turn_state, messages)
            state.lang = texts.language(policy.config, state.turn_state.user_text)
            for stage in policy.stages:
                self._guarded(stage, "new_turn", None)
            return expectation

    def finish_round(self, text: str | None) -> RoundOutcome:
        """After a round without tool calls (or cut short by a breaker): retry or finish."""
        state = self._state
        with state.lock:
            if state.turn_state is None:
                state.turn_state = self._policy.turn_policy.new_state()
            outcome = self._policy.turn_policy.finish_round(state.turn_state, text)
            if outcome.action == "retry":
                state.tools_closed = False
            return outcome

    @property
    def expectation(self) -> TurnExpectation | None:
        ts = self._state.turn_state
        return None if ts is None else ts.expectation

    # -- calls -------------------------------------------------------------
    def _call(self, tool: Any, args: Any, call_id: Any, run_id: Any, seq: int) -> Call:
        name = tool if isinstance(tool, str) else str(tool)
        parsed = parse_args(args)
        canonical = canonical_text(parsed)
        return Call(name, parsed, canonical, args_digest(name, canonical), seq,
                    self._state.turn, None if run_id is None else str(run_id),
                    None if call_id is None else str(call_id))

    def before_call(self, tool: Any, args: Any = None, call_id: Any = None,
                    run_id: Any = None) -> Decision:
        """Decide whether a tool call may run; records it in the history."""
        state, policy = self._state, self._policy
        with state.lock:
            state.seq += 1
            state.last_used = time.monotonic()
            call = self._call(tool, args, call_id, run_id, state.seq)
            votes: list[Vote] = []
            faults: list[str] = []
            for stage in policy.stages:
                vote = self._guarded(stage, "check", call, faults)
                if vote is not None:
                    votes.append(vote)
            for stage in policy.stages:
                self._guarded(stage, "record", call, faults)
            decision = policy.aggregator.decide(call, votes, faults, state, "before")
            entry = HistoryEntry(call.seq, call.tool, call.digest, call.run_id, call.turn, call.call_id)
            if decision.blocked:
                entry.outcome = VETO
            append(state, entry, policy.history_size)
            self._open(entry)
            if decision.action == "breaker":
                state.tools_closed = True
                if state.turn_state is not None:
                    policy.turn_policy.note_breaker(state.turn_state)
            elif state.turn_state is not None:
                policy.turn_policy.observe_call(state.turn_state, call.tool, call.args,
                                                not decision.blocked)
        self.guard._notify(self.id, decision)
        return decision

    def after_call(self, tool: Any, args: Any = None, result: Any = None, error: Any = None,
                   call_id: Any = None, run_id: Any = None) -> Decision:
        """Record a call's result (or error); post-call detectors may trip a breaker."""
        state, policy = self._state, self._policy
        with state.lock:
            state.last_used = time.monotonic()
            call = self._call(tool, args, call_id, run_id, 0)
            entry = self._close(call)
            if entry is None:  # after_call without before_call: record it now
                state.seq += 1
                entry = HistoryEntry(state.seq, call.tool, call.digest, call.run_id, call.turn,
                                     call.call_id)
                append(state, entry, policy.history_size)
            call.seq = entry.seq
            if entry.outcome == VETO:  # the guard blocked it: the veto stays its outcome
                return policy.aggregator.decide(call, (), (), state, "after")
            if error is not None:
                entry.outcome = error_outcome(error)
                call.error = error if isinstance(error, str) else repr(error)
            else:
                drop, keep = policy.outcome_rules(call.tool)
                entry.outcome = result_outcome(result, drop, keep)
            call.outcome = entry.outcome
            votes: list[Vote] = []
            faults: list[str] = []
            for stage in policy.stages:
                vote = self._guarded(stage, "after", call, faults)
                if vote is not None:
                    votes.append(vote)
            entry.unknown = call.unknown
            decision = policy.aggregator.decide(call, votes, faults, state, "after")
            if decision.action == "breaker":
                state.tools_closed = True
                if state.turn_state is not None:
                    policy.turn_policy.note_breaker(state.turn_state)
        self.guard._notify(self.id, decision)
        return decision

    def compacted(self) -> None:
        """The host compacted the context and is retrying: arms the post-compaction guard."""
        state = self._state
        with state.lock:
            for stage in self._policy.stages:
                self._guarded(stage, "compacted", None)

    def history(self) -> list[HistoryEntry]:
        """A snapshot of the recorded calls, oldest first."""
        with self._state.lock:
            return list(self._state.history)

    @property
    def tools_closed(self) -> bool:
        """True after a breaker until the next turn (or a required-tool retry)."""
        return self._state.tools_closed

    # -- internals ---------------------------------------------------------
    def _guarded(self, stage: Any, hook: str, call: Call | None,
                 faults: list[str] | None = None) -> Any:
        """Run one detector hook; a detector that raises is isolated and reported."""
        try:
            method = getattr(stage.detector, hook)
            if call is None:
                return method(self._state, stage.cfg)
            return method(call, self._state, stage.cfg)
        except Exception as exc:  # noqa: BLE001 — a plugin must never take the host down
            error = f"{type(exc).__name__}: {exc}"
            if faults is not None:
                faults.append(f"{stage.source}: {error}")
                return self._policy.aggregator.fault_vote(stage.detector.id, stage.source, error)
            return None

    def _open(self, entry: HistoryEntry) -> None:
        opened = self._state.scratch.setdefault("_open", {})
        key = entry.call_id if entry.call_id is not None else entry.digest
        opened.setdefault(key, []).append(entry)
        if len(opened) > _MAX_OPEN:
            del opened[next(iter(opened))]

    def _close(self, call: Call) -> HistoryEntry | None:
        opened = self._state.scratch.get("_open")
        if not opened:
            return None
        key = call.call_id if call.call_id is not None else call.digest
        waiting = opened.get(key)
        if not waiting:
            return None
        entry = waiting.pop(0)
        if not waiting:
            del opened[key]
        return entry
