"""The framework-neutral half of every adapter: sessions, calls, notes and the end of a turn.

Each adapter translates its framework's hooks into these few steps and its objects into
plain names, dicts and strings; what the guard decides and every text the model sees come
from the Session API and `loopguard.session.answers`, never from the adapter.

Sessions are looked up by id on every call (a framework shares one tool or middleware
object between conversations). The breaker that closed a session's turn is remembered
here until its next turn, so the final answer can say why the run stopped; so are the
decisions a model response's calls got until each call runs (`decide`, `take`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from loopguard.decision import Decision
from loopguard.session import answers
from loopguard.session.guard import Guard
from loopguard.session.session import Session
from loopguard.state.turn import RoundOutcome, TurnExpectation

_MAX_REMEMBERED = 4096  # entries each table of an adapter keeps (a host may never report back)


@dataclass(frozen=True)
class Ending:
    """How a turn a breaker closed ends: a retry prompt, or the final answer."""

    retry: str | None  # a user-role text asking for the required tool (tools re-opened)
    text: str  # the final answer when there is no retry


class Options(TypedDict, total=False):
    """The keyword options of an adapter's constructor, handed on to `GuardCore`."""

    agent: str | None  # selects the rules' per-agent overrides
    run_id: str | None  # separates concurrent sub-agents sharing a session
    tools: Iterable[str] | None  # the offered tools, where the framework does not say


class GuardCore:
    """One adapter's link to a Guard: per-session calls, notes and breakers."""

    def __init__(
        self,
        guard: Guard | None = None,
        agent: str | None = None,
        run_id: str | None = None,
        tools: Iterable[str] | None = None,
    ) -> None:
        self.guard = guard if guard is not None else Guard.default()
        self.agent = agent
        self.run_id = run_id
        self.tools = None if tools is None else list(tools)
        self._lock = threading.Lock()
        self._before: dict[tuple[str, str], Decision] = {}
        self._breakers: dict[str, Decision] = {}
        self._decided: dict[tuple[str, str], Decision] = {}
        self._compactions: dict[str, Any] = {}

    def session(self, session_id: str) -> Session:
        return self.guard.session(session_id, self.agent)

    # -- turns ---------------------------------------------------------------
    def begin_turn(
        self, session_id: str, messages: Sequence[Any], tools: Iterable[str] | None = None
    ) -> TurnExpectation | None:
        """A user turn starts: forget the last turn's breaker, ask for the required tool.

        The offered tools are the `tools` option when given, else `tools` (what the
        framework offers), else unknown.
        """
        with self._lock:
            self._breakers.pop(session_id, None)
        offered = self.tools if self.tools is not None else tools
        return self.session(session_id).begin_turn(list(messages), tools=offered)

    def begin_round(self, session_id: str) -> None:
        """A model response with tool calls arrived: its calls are one batch."""
        self.session(session_id).begin_round()

    def closed(self, session_id: str) -> bool:
        """True when a breaker closed the tools of this session's turn."""
        return self.session(session_id).tools_closed

    def breaker(self, session_id: str) -> Decision | None:
        with self._lock:
            return self._breakers.get(session_id)

    def compaction(self, session_id: str, marker: Any) -> None:
        """`marker` names the newest compaction the framework shows (a summary message, a
        compaction event): one this session has not seen yet calls `compacted()`."""
        with self._lock:
            seen = self._compactions.get(session_id) == marker
            self._compactions[session_id] = marker
            _bound(self._compactions)
        if not seen:
            self.session(session_id).compacted()

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

    def decide(self, session_id: str, calls: Sequence[tuple[str, Any, Any]]) -> None:
        """A model response's (tool, args, call id) calls are one batch, decided now in the
        model's order (frameworks run a batch's calls concurrently); `take` hands them out."""
        if not calls:
            return
        self.begin_round(session_id)
        for tool, args, call_id in calls:
            decision = self.before(session_id, tool, args, call_id)
            with self._lock:
                self._decided[(session_id, str(call_id))] = decision
                _bound(self._decided)

    def take(self, session_id: str, tool: str, args: Any, call_id: Any) -> Decision:
        """The decision `decide` made for this call, else `before` now (a call no model
        response showed, e.g. one resumed after an approval)."""
        with self._lock:
            decision = self._decided.pop((session_id, str(call_id)), None)
        if decision is None:
            decision = self.before(session_id, tool, args, call_id)
        return decision

    def _remember(self, session_id: str, call_id: str | None, decision: Decision) -> None:
        with self._lock:
            if decision.action == "breaker" and not answers.is_aborted(decision):
                self._breakers.setdefault(session_id, decision)
                _bound(self._breakers)
            if call_id is not None and not decision.blocked:
                self._before[(session_id, call_id)] = decision
                _bound(self._before)


def json_args(raw: Any) -> Any:
    """Tool arguments given as JSON text, parsed (empty text: none); text that does not
    parse is kept as given, as is anything else."""
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw


def _bound(table: dict[Any, Any]) -> None:
    """Forget the oldest entries past the limit (dicts keep insertion order)."""
    while len(table) > _MAX_REMEMBERED:
        del table[next(iter(table))]
