"""A `Session` whose state lives in a `VersionedStore`: every method is one optimistic write.

Each public method runs the ordinary `Session` method on the state this process holds for
the session, then writes it back with a compare-and-set (see `versioned`); when another
worker wrote first, the method runs again on the newer state (from the second lost race on,
after a short random pause, so workers contending for one session take turns). Decisions
are handed to `loopguard_on_decision` plugins only once the write landed, so a retried
method notifies once. When the store is unavailable (or the stored state unreadable)
nothing is recorded and `fail_mode` decides: open allows, closed blocks the call; never an
exception.
"""

from __future__ import annotations

import functools
import inspect
import logging
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from loopguard.decision import Decision, Vote
from loopguard.session.session import Session
from loopguard.state.history import HistoryEntry, SessionState
from loopguard.state.turn import RoundOutcome, TurnExpectation
from loopguard.stores.codec import StateCodecError
from loopguard.stores.versioned import StoreUnavailable, VersionedStore
from loopguard.text.hints import safe_str

if TYPE_CHECKING:
    from loopguard.policy.compile import CompiledPolicy
    from loopguard.session.notifier import Notifier

MAX_ATTEMPTS = 1000  # writes lost to other workers before a method gives up (fail_mode)
CONTENTION_S = 5.0  # or, sooner, the time a method may spend losing races
PAUSE_S = 0.0005  # the pause before the third attempt; it doubles with each lost race
PAUSE_MAX_S = 0.032
log = logging.getLogger("loopguard")
_F = TypeVar("_F", bound=Callable[..., Any])


class _Deferring:
    """The session's notifier: holds decisions back while a method may still be re-run."""

    def __init__(self, notifier: Notifier) -> None:
        self.notifier = notifier
        self.held: list[tuple[str, Decision]] | None = None  # a list while a method runs

    def decision(self, session_id: str, decision: Decision) -> None:
        if self.held is None:
            self.notifier.decision(session_id, decision)
        else:
            self.held.append((session_id, decision))

    def fault(self, source: str, error: str) -> None:
        self.notifier.fault(source, error)


def _written(method: _F, fallback: Callable[[StoredSession, Exception, dict[str, Any]], Any]) -> _F:
    """A `Session` method run as one optimistic write (`StoredSession._run`); when the state
    cannot be read or written, `fallback(session, exc, the call's arguments by name)` answers."""
    signature = inspect.signature(method)

    @functools.wraps(method)
    def written(self: StoredSession, *args: Any, **kwargs: Any) -> Any:
        return self._run(
            lambda: method(self, *args, **kwargs),
            lambda exc: fallback(self, exc, signature.bind(self, *args, **kwargs).arguments),
        )

    return cast(_F, written)


class StoredSession(Session):
    """One session of a shared store; safe across threads and processes."""

    blocking_io = True  # each method waits for the store: async hosts run it in a thread

    def __init__(
        self,
        notifier: Notifier,
        session_id: str,
        agent: str | None,
        policy: CompiledPolicy,
        store: VersionedStore,
        key: str,
    ) -> None:
        self._store, self._key = store, key
        self._deferring = _Deferring(notifier)
        super().__init__(
            self._deferring,
            session_id,
            agent,
            policy,
            SessionState(policy.history_size, policy.indexed),
        )

    # -- the public methods, each one optimistic write ----------------------
    begin_turn = _written(Session.begin_turn, lambda session, exc, call: None)
    finish_round = _written(
        Session.finish_round,
        lambda session, exc, call: RoundOutcome("finish", None, call["text"], None, 0),
    )
    begin_round = _written(Session.begin_round, lambda session, exc, call: 0)
    end_round = _written(Session.end_round, lambda session, exc, call: None)
    compacted = _written(Session.compacted, lambda session, exc, call: None)
    before_call = _written(
        Session.before_call, lambda session, exc, call: session._unavailable(exc, call, "before")
    )
    after_call = _written(
        Session.after_call, lambda session, exc, call: session._unavailable(exc, call, "after")
    )

    # -- reads: the stored state now (one round trip), else the last one seen --
    def history(self) -> list[HistoryEntry]:
        state = self._view()
        with state.lock:
            return list(state.history)

    @property
    def turn(self) -> int:
        return self._view().turn

    @property
    def tools_closed(self) -> bool:
        return self._view().tools_closed

    @property
    def expectation(self) -> TurnExpectation | None:
        ts = self._view().turn_state
        return None if ts is None else ts.expectation

    # -- internals ---------------------------------------------------------
    def _fresh(self) -> SessionState:
        return SessionState(self._policy.history_size, self._policy.indexed)

    def _view(self) -> SessionState:
        store, policy = self._store, self._policy
        with store.lock_for(self._key):
            try:
                self._state = store.refresh(
                    self._key, self._fresh, policy.history_size, policy.indexed
                )[1]
            except (StoreUnavailable, StateCodecError):
                pass  # a read-only view: the copy this process holds is the best answer now
            return self._state

    def _run(self, method: Callable[[], Any], fallback: Callable[[Exception], Any]) -> Any:
        """Run `method` on the current state and write it back; retry when another worker won.

        The first lost race is run again at once on the state the store answered with; after
        that each retry waits a random pause that doubles up to PAUSE_MAX_S (the local lock
        released) and reads the state again, so workers contending for one session take turns
        instead of losing to each other. Only past CONTENTION_S (or MAX_ATTEMPTS) is the method
        given up: logged as a warning, and its call follows fail_mode.
        """
        store, key, policy = self._store, self._key, self._policy
        size, indexed = policy.history_size, policy.indexed
        lost, started = 0, time.monotonic()
        while True:
            with store.lock_for(key):
                self._deferring.held = []
                try:
                    token, self._state = store.checkout(key, self._fresh, size, indexed)
                    try:
                        result = method()
                    except BaseException:
                        store.forget(key)  # half-done: never keep it
                        raise
                    current = store.commit(key, token, self._state)
                    if current is not None:  # another worker wrote first
                        lost += 1
                        if lost == 1:  # run again at once on the state it wrote
                            store.adopt(key, current, self._fresh, size, indexed)
                        else:  # read it again after the pause
                            store.forget(key)
                except StoreUnavailable as exc:
                    return fallback(exc)
                except StateCodecError as exc:
                    store.report_damaged(key, exc)
                    return fallback(exc)
                finally:
                    held, self._deferring.held = self._deferring.held or [], None
                if current is None:
                    for session_id, decision in held:
                        self._deferring.notifier.decision(session_id, decision)
                    return result
            waited = time.monotonic() - started
            if lost >= MAX_ATTEMPTS or waited >= CONTENTION_S:
                return fallback(self._given_up(lost, waited))
            if lost > 1:
                time.sleep(random.uniform(0, min(PAUSE_MAX_S, PAUSE_S * 2 ** (lost - 2))))

    def _given_up(self, lost: int, waited: float) -> StoreUnavailable:
        """The fault of a method that lost every race (logged: the call is not recorded)."""
        log.warning(
            "loopguard %s: session %r: %d writes in a row lost to other workers in %.1f s; "
            "this call is not recorded and follows fail_mode",
            self._store.name,
            self._key,
            lost,
            waited,
        )
        return StoreUnavailable(f"{lost} writes in a row lost to other workers")

    def _unavailable(self, exc: Exception, call: dict[str, Any], phase: str) -> Decision:
        """The decision when the state cannot be read or written: `fail_mode` open or closed."""
        tool, call_id, run_id = call["tool"], call.get("call_id"), call.get("run_id")
        name = tool if isinstance(tool, str) else safe_str(tool)
        cid = None if call_id is None else safe_str(call_id)
        rid = None if run_id is None else safe_str(run_id)
        fault = f"{self._store.name}: {type(exc).__name__}: {exc}"
        mode = self._store.fail_mode or (
            "closed" if self._policy.aggregator.fail_closed else "open"
        )
        turn = self._state.turn
        if phase == "after" or mode == "open":
            return Decision("allow", (), None, name, cid, 0, turn, rid, phase, faults=(fault,))
        why = (
            f"loopguard cannot read or write this session's state ({self._store.name}) and "
            "fail_mode is closed"
        )
        vote = Vote("store", "critical", 0, "store:unavailable", why, (), "store_unavailable")
        text = self._policy.aggregator.render(
            self._state, "blocked", message=why + ".", detector="store", count=0, tool=name
        )
        return Decision(
            "critical", (vote,), text, name, cid, 0, turn, rid, phase, "store", faults=(fault,)
        )
