"""One conversation's view of the guard: the public per-call API.

Every method takes the session's lock, so a session can be shared between
threads. Work per call is proportional to the call (fingerprinting its
arguments and result) plus small, bounded detector windows — never to the
whole history or the number of sessions.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from loopguard.decision import Decision, Vote, allowed
from loopguard.detection.aggregator import log_decision
from loopguard.detection.sandbox import vote_problem
from loopguard.session import answers
from loopguard.state.fingerprint import (
    args_digest,
    canonical_text,
    error_outcome,
    outcome_of_text,
    parse_args,
    result_text,
)
from loopguard.state.history import (
    VETO,
    Call,
    HistoryEntry,
    SessionState,
    append,
    pending_entry,
    seen_lately,
)
from loopguard.state.turn import RoundOutcome, TurnExpectation
from loopguard.text import messages as texts
from loopguard.text.hints import safe_str

if TYPE_CHECKING:
    from loopguard.policy.compile import CompiledPolicy
    from loopguard.session.notifier import Notifier

_MAX_OPEN = 256  # calls awaiting after_call remembered per session


def _loggable(number: Any) -> int:
    """A host-made decision's number as the decision log line can print it (`%d`), else 0:
    an integer over 4,300 digits, or a text, made the log record fail."""
    return number if type(number) is int and -(2**63) <= number < 2**63 else 0


class Session:
    """Handle on one session's state under one compiled policy."""

    def __init__(
        self,
        notifier: Notifier,
        session_id: str,
        agent: str | None,
        policy: CompiledPolicy,
        state: SessionState,
    ) -> None:
        """`notifier` receives the non-allow decisions and plugin faults (the Guard's)."""
        self._notifier = notifier
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
    def begin_turn(
        self, messages: Sequence[Any], tools: Iterable[str] | None = None
    ) -> TurnExpectation | None:
        """Start a user turn; returns the tool the model must call, if any.

        `tools` (optional) names the tools the agent offers this turn; a required tool
        not among them is no requirement. None means unknown: every tool counts as offered.
        """
        state, policy = self._state, self._policy
        with state.lock:
            state.turn += 1
            state.tools_closed = False
            state.batch_open = False
            state.last_used = time.monotonic()
            if state.turn_state is None:
                state.turn_state = policy.turn_policy.new_state()
            expectation = policy.turn_policy.begin_turn(state.turn_state, messages, tools)
            state.lang = texts.language(policy.config, state.turn_state.user_text)
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

    # -- rounds ------------------------------------------------------------
    def begin_round(self) -> int:
        """A model response arrived: the calls it asked for, until the next `begin_round`,
        `end_round` or turn, form one batch (round).

        Calls of one batch were chosen together, before the model saw any of their
        results, so they never count as repeats of one another. Without
        `begin_round`, every call is a round of its own. Returns the round number.
        """
        state = self._state
        with state.lock:
            state.round += 1
            state.batch_open = True
            return state.round

    def end_round(self) -> None:
        """The current batch is over; later calls are rounds of their own until `begin_round`."""
        with self._state.lock:
            self._state.batch_open = False

    # -- calls -------------------------------------------------------------
    def before_call(
        self, tool: Any, args: Any = None, call_id: Any = None, run_id: Any = None
    ) -> Decision:
        """Decide whether a tool call may run; records it in the history."""
        state, policy = self._state, self._policy
        name = tool if type(tool) is str else safe_str(tool)
        cid = call_id if call_id is None or type(call_id) is str else safe_str(call_id)
        rid = run_id if run_id is None or type(run_id) is str else safe_str(run_id)
        parsed = args if type(args) is dict else parse_args(args)  # (its first test, inlined)
        canonical = canonical_text(parsed)
        digest = args_digest(name, canonical)
        with state.lock:
            if (
                state.tools_closed
                and state.batch_open
                and state.scratch.get("_closed_round") == state.round
            ):
                # the rest of the batch a breaker closed: answered as aborted, never recorded
                decision = answers.aborted(policy.config, state.lang, name, cid, state.turn, rid)
            else:
                seq = state.seq = state.seq + 1
                state.last_used = time.monotonic()
                if not state.batch_open:
                    state.round += 1
                turn, batch = state.turn, state.round
                call = Call(name, parsed, canonical, digest, seq, turn, rid, cid, batch)
                faults: list[str] = []
                # Repeat-only detectors run only for a call seen lately.
                call.seen = seen_lately(state, rid, digest)
                votes = self._votes(
                    policy.seen_checks if call.seen else policy.checks, call, faults
                )
                decision = (
                    policy.aggregator.decide(call, votes, faults, state, "before")
                    if votes
                    else allowed(name, cid, seq, turn, rid, "before", tuple(faults))
                )
                entry = HistoryEntry(seq, name, digest, rid, turn, cid, batch)
                action = decision.action
                if action != "allow" and action != "warn":
                    entry.outcome = VETO
                append(state, entry, policy.history_size)
                self._open(entry)
                if action == "breaker":
                    self._close_tools()
                elif state.turn_state is not None and state.turn_state.expectation is not None:
                    policy.turn_policy.observe_call(
                        state.turn_state, name, parsed, action != "critical"
                    )
        if decision.action != "allow":
            self._notifier.decision(self.id, decision)
        return decision

    def after_call(
        self,
        tool: Any,
        args: Any = None,
        result: Any = None,
        error: Any = None,
        call_id: Any = None,
        run_id: Any = None,
    ) -> Decision:
        """Record a call's result (or error); post-call detectors may trip a breaker.

        The call is matched to its `before_call` by `call_id`, or without one by
        tool name and arguments (oldest unanswered first). An unmatched call (a host
        that reports calls only once they ran) is checked now as `before_call` would
        have checked it, then recorded with its outcome; the decision weighs both
        checks' votes (see `_unmatched`).
        """
        state, policy = self._state, self._policy
        name = tool if type(tool) is str else safe_str(tool)
        cid = call_id if call_id is None or type(call_id) is str else safe_str(call_id)
        with state.lock:
            state.last_used = time.monotonic()
            entry = self._close(cid if cid is not None else name, name, args)
            if entry is not None and entry.outcome == VETO:  # blocked: the veto stays its outcome
                return allowed(name, entry.call_id, entry.seq, entry.turn, entry.run_id, "after")
            faults: list[str] = []
            early: list[Vote] = []  # the before-call checks' votes of an unmatched call
            if entry is None:
                entry = self._unmatched(name, args, cid, run_id, early, faults)
            call = Call(
                name,
                None,
                "",
                entry.digest,
                entry.seq,
                entry.turn,
                entry.run_id,
                entry.call_id,
                entry.round,
            )
            # The result is read only now: a blocked call's result (replays have them) is unused.
            if error is not None:
                text = error if type(error) is str else safe_str(error)
                outcome = error_outcome(error)
            else:
                drop, keep = policy.outcome_rules(name)
                text = result_text(result, drop, keep)
                outcome = outcome_of_text(text)
            entry.outcome = call.outcome = outcome
            call.text = text
            if policy.outcome_reader is not None:
                policy.outcome_reader.read(state, entry, text, error is not None)
                call.flags = entry.flags
            if error is not None:
                call.error = text
                if policy.unknown_tools is not None:  # the engine's classification, rules-driven
                    call.unknown = policy.unknown_tools.classify(name, text)
            votes = self._votes(policy.afters, call, faults)
            if early:
                votes = early + votes
            entry.unknown = call.unknown
            decision = (
                policy.aggregator.decide(call, votes, faults, state, "after")
                if votes
                else allowed(
                    name, entry.call_id, entry.seq, entry.turn, entry.run_id, "after", tuple(faults)
                )
            )
            if decision.action == "breaker":
                self._close_tools()
        if decision.action != "allow":
            self._notifier.decision(self.id, decision)
        return decision

    def report(self, decision: Decision) -> Decision:
        """A decision the host made outside the detectors (the runtime's round cap), reported
        like every other: logged on `loopguard.decisions` and handed to `loopguard_on_decision`
        listeners. Nothing is recorded in the history. Returns `decision`."""
        if not isinstance(decision, Decision):
            raise TypeError(
                f"Session.report takes a loopguard.Decision, not {type(decision).__name__}"
            )
        if decision.action != "allow":
            top = decision.top
            log_decision(
                decision.action,
                decision.tool,
                _loggable(decision.seq),
                _loggable(decision.turn),
                top.message if top else decision.message or "",
                decision.detector or "",
                _loggable(top.count if top else 0),
            )
            self._notifier.decision(self.id, decision)
        return decision

    def compacted(self) -> None:
        """The host compacted the context and is retrying: arms the post-compaction guard."""
        state = self._state
        with state.lock:
            for hook, cfg, stage in self._policy.compaction_hooks:
                try:
                    hook(state, cfg)
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:  # noqa: BLE001 - plugin code (even sys.exit)
                    self._fault(stage, exc, None)

    def history(self) -> list[HistoryEntry]:
        """A snapshot of the recorded calls, oldest first."""
        with self._state.lock:
            return list(self._state.history)

    @property
    def tools_closed(self) -> bool:
        """True after a breaker until the next turn (or a required-tool retry)."""
        return self._state.tools_closed

    # -- internals ---------------------------------------------------------
    def _votes(self, hooks: Any, call: Call, faults: list[str]) -> list[Vote]:
        """Run `check` or `after` hooks; a detector that raises or returns junk is a fault."""
        state = self._state
        votes: list[Vote] = []
        for hook, cfg, stage in hooks:
            try:
                vote = hook(call, state, cfg)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001 — a plugin (even sys.exit) must never take the host down
                vote = self._fault(stage, exc, faults)
            if vote is not None:
                problem = None if stage.trusted else vote_problem(vote)
                if problem is not None:
                    vote = self._fault(stage, TypeError(problem), faults)
                if vote is not None:
                    votes.append(vote)
        return votes

    def _unmatched(
        self,
        name: str,
        args: Any,
        call_id: str | None,
        run_id: Any,
        votes: list[Vote],
        faults: list[str],
    ) -> HistoryEntry:
        """Record an after_call that answers no before_call; its check votes go to `votes`.

        The call already ran, so nothing can stop it: its check votes (the history then
        holds only earlier calls, as for `before_call`) count in this after_call's decision,
        which tells a host that reports calls only after the fact to stop (a breaker also
        closes the tools, as everywhere). Its entry keeps its real outcome (never a veto).
        A call `before_call` answered as aborted (the rest of a batch a breaker closed) is
        only recorded: it was refused already.
        """
        state, policy = self._state, self._policy
        aborted = (
            state.tools_closed
            and state.batch_open
            and state.scratch.get("_closed_round") == state.round
        )
        parsed = parse_args(args)
        canonical = canonical_text(parsed)
        digest = args_digest(name, canonical)
        state.seq += 1
        if not state.batch_open:
            state.round += 1
        rid = None if run_id is None else safe_str(run_id)
        entry = HistoryEntry(state.seq, name, digest, rid, state.turn, call_id, state.round)
        if not aborted:
            call = Call(name, parsed, canonical, digest, entry.seq, entry.turn, rid, call_id)
            call.round = entry.round
            call.seen = seen_lately(state, rid, digest)
            hooks = policy.seen_checks if call.seen else policy.checks
            votes.extend(self._votes(hooks, call, faults))
            if state.turn_state is not None and state.turn_state.expectation is not None:
                policy.turn_policy.observe_call(state.turn_state, name, parsed, True)
        append(state, entry, policy.history_size)
        return entry

    def _fault(self, stage: Any, exc: BaseException, faults: list[str] | None) -> Vote | None:
        """Record a detector that raised; with `fail_mode: closed` it votes critical."""
        error = f"{type(exc).__name__}: {safe_str(exc)}"
        self._notifier.fault(stage.source, error)
        if faults is None:
            return None
        faults.append(f"{stage.source}: {error}")
        return self._policy.aggregator.fault_vote(stage.detector.id, stage.source, error)

    def _close_tools(self) -> None:
        """A breaker: tools close for the rest of the turn, and the rest of its batch is aborted."""
        state = self._state
        state.tools_closed = True
        state.scratch["_closed_round"] = state.round

    def _open(self, entry: HistoryEntry) -> None:
        """Remember a call until its after_call (by call id, else by tool name).

        Bounded: at most `_MAX_OPEN` keys and `_MAX_OPEN` calls per key, the oldest
        forgotten first (a host that never reports results must not leak memory).
        A forgotten call is counted in `scratch["_lost"]`: its result is then looked
        for among the pending entries of the history (see `_close`).
        """
        scratch = self._state.scratch
        opened = scratch.get("_open")
        if opened is None:
            opened = scratch["_open"] = {}
        key = entry.call_id if entry.call_id is not None else entry.tool
        waiting = opened.get(key)
        if waiting is None:
            opened[key] = [entry]
            if len(opened) > _MAX_OPEN:
                lost = opened.pop(next(iter(opened)))
                scratch["_lost"] = scratch.get("_lost", 0) + len(lost)
        else:
            waiting.append(entry)
            if len(waiting) > _MAX_OPEN:
                del waiting[0]
                scratch["_lost"] = scratch.get("_lost", 0) + 1

    def _close(self, key: str, tool: str, args: Any) -> HistoryEntry | None:
        """The open call answered by this after_call, if any.

        By call id. Without one, by tool name: the oldest open call of the tool;
        when several are open, the oldest with the same arguments, preferring a
        call that ran over one the guard blocked (the runtime never reports a
        result for a blocked call).
        """
        opened = self._state.scratch.get("_open") or {}
        waiting = opened.get(key)
        if not waiting:
            return self._lost_call(key, tool, args) if self._state.scratch.get("_lost") else None
        index = 0
        if len(waiting) > 1:
            digest = args_digest(tool, canonical_text(parse_args(args)))
            same = [i for i, e in enumerate(waiting) if e.digest == digest]
            ran = [i for i in same if waiting[i].outcome != VETO]
            index = (ran or same or [0])[0]
        entry = waiting.pop(index)
        if not waiting:
            del opened[key]
        return entry

    def _lost_call(self, key: str, tool: str, args: Any) -> HistoryEntry | None:
        """A pending call `_open` forgot (more than `_MAX_OPEN` in flight), from the history."""
        state = self._state
        digest = args_digest(tool, canonical_text(parse_args(args)))
        entry = pending_entry(state, key, tool, digest)
        if entry is not None:
            state.scratch["_lost"] -= 1
        return entry
