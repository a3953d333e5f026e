"""The framework-neutral half of every adapter: sessions, calls, notes and the end of a turn.

Each adapter translates its framework's hooks into these few steps and its objects into
plain names, dicts and strings; what the guard decides and every text the model sees come
from the Session API and `loopguard.session.answers`, never from the adapter.

Sessions are looked up by id on every call (a framework shares one tool or middleware
object between conversations). The breaker that closed a session's turn is remembered
here until its next turn, so the final answer can say why the run stopped.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from loopguard.decision import Decision
from loopguard.session import answers
from loopguard.session.guard import Guard
from loopguard.session.session import Session
from loopguard.state.turn import RoundOutcome, TurnExpectation

_MAX_REMEMBERED = 4096  # open calls / breakers kept per adapter (a host may never report back)


@dataclass(frozen=True)
class Ending:
    """How a turn a breaker closed ends: a retry prompt, or the final answer."""

    retry: str | None  # a user-role text asking for the required tool (tools re-opened)
    text: str  # the final answer when there is no retry


class GuardCore:
    """One adapter's link to a Guard: per-session calls, notes and breakers."""

    def __init__(
        self, guard: Guard | None = None, agent: str | None = None, run_id: str | None = None
    ) -> None:
        self.guard = guard if guard is not None else Guard.default()
        self.agent = agent
        self.run_id = run_id
        self._lock = threading.Lock()
        self._before: dict[tuple[str, str], Decision] = {}
        self._breakers: dict[str, Decision] = {}

    def session(self, session_id: str) -> Session:
        return self.guard.session(session_id, self.agent)

    # -- turns ---------------------------------------------------------------
    def begin_turn(
        self, session_id: str, messages: Sequence[Any], tools: Iterable[str] | None = None
    ) -> TurnExpectation | None:
        """A user turn starts: forget the last turn's breaker, ask for the required tool."""
        with self._lock:
            self._breakers.pop(session_id, None)
        return self.session(session_id).begin_turn(list(messages), tools=tools)

    def begin_round(self, session_id: str) -> None:
        """A model response with tool calls arrived: its calls are one batch."""
        self.session(session_id).begin_round()

    def closed(self, session_id: str) -> bool:
        """True when a breaker closed the tools of this session's turn."""
        return self.session(session_id).tools_closed

    def breaker(self, session_id: str) -> Decision | None:
        with self._lock:
            return self._breakers.get(session_id)

    def finish(self, session_id: str, text: str | None) -> RoundOutcome:
        """A round ended without tool calls: `finish_round` (retry or finish)."""
        return self.session(session_id).finish_round(text)

    def ending(self, session_id: str, model_text: str | None) -> Ending:
        """A breaker closed the turn: a required-tool retry, else the final answer."""
        outcome = self.finish(session_id, model_text or None)
        if outcome.action == "retry":
            with self._lock:
                self._breakers.pop(session_id, None)
            return Ending(outcome.message or "", "")
        final = outcome.text or ""
        breaker = self.breaker(session_id)
        if not (model_text or "").strip() and breaker is not None:
            final = answers.stop_text(final, breaker)
        return Ending(None, final)

    # -- calls ---------------------------------------------------------------
    def before(
        self, session_id: str, tool: str, args: Any, call_id: str | None, run_id: str | None = None
    ) -> Decision:
        """`before_call`; a breaker is remembered for the final answer.

        `run_id` (a sub-agent's id) overrides the adapter's own for this call.
        """
        decision = self.session(session_id).before_call(
            tool, args, call_id=call_id, run_id=run_id or self.run_id
        )
        self._remember(session_id, call_id, decision)
        return decision

    def after(
        self,
        session_id: str,
        tool: str,
        args: Any,
        call_id: str | None,
        result: Any = None,
        error: str | None = None,
        run_id: str | None = None,
    ) -> list[Decision]:
        """`after_call`; the call's decisions (before and after) for `answers.with_notes`."""
        decision = self.session(session_id).after_call(
            tool, args, result=result, error=error, call_id=call_id, run_id=run_id or self.run_id
        )
        self._remember(session_id, None, decision)
        with self._lock:
            before = self._before.pop((session_id, call_id), None) if call_id is not None else None
        return [d for d in (before, decision) if d is not None]

    def _remember(self, session_id: str, call_id: str | None, decision: Decision) -> None:
        with self._lock:
            if decision.action == "breaker" and not answers.is_aborted(decision):
                self._breakers.setdefault(session_id, decision)
                _bound(self._breakers)
            if call_id is not None and not decision.blocked:
                self._before[(session_id, call_id)] = decision
                _bound(self._before)


def _bound(table: dict[Any, Any]) -> None:
    """Forget the oldest entries past the limit (dicts keep insertion order)."""
    while len(table) > _MAX_REMEMBERED:
        del table[next(iter(table))]
