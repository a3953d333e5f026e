"""What third-party detector code sees of a session, what it may vote, and how long it may take.

Built-in detectors get the live `Call` and `SessionState`. A plugin's hooks are wrapped
once per compiled policy (`wrap`), so nothing it does can blind the other detectors or
make the host's call raise:

- It sees a copy of the call (`CallView`, its `args` copied when read) and a read-only
  view of the session (`StateView`): history entries are immutable snapshots
  (`EntryView`), and `scratch` holds only its own slot, `state.scratch[its id]`. A view
  costs about a microsecond a hook call, plus a snapshot per entry read.
- Its vote must be a well-formed `Vote` under its own id (`vote_problem`).
- A hook call over `SLOW_S` is an overrun, logged; the `MAX_OVERRUNS`th overrun, or one
  call over `STOP_S`, disables the detector for the process (its `Budget` lives in the
  registry entry): every later call is a fault, handled per `fail_mode`. A running hook is
  not interrupted: that would take a thread per call, so an overrun costs its time once.

These views stop writes through everything a detector is handed, not plugin code that digs
the session out of the interpreter (`gc`, frames).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from operator import attrgetter
from types import MappingProxyType
from typing import Any

from loopguard.decision import LEVELS, Vote
from loopguard.state.history import EVIDENCE_MAX, Bucket, Call, HistoryEntry, SessionState
from loopguard.text.jsontext import loads

MAX_COUNT = 2**63 - 1  # a vote's count and evidence seqs (a session's call numbers fit)


def safe_repr(value: Any) -> str:
    """`repr(value)`, or `<ClassName object>` when its `__repr__` raises; at most 120 characters."""
    try:
        text = repr(value)
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - a plugin's repr may do anything
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= 120 else text[:117] + "..."


def vote_problem(vote: Any, ident: str | None = None) -> str | None:
    """Why a value a detector returned is not a usable `Vote` (from detector `ident`: under
    its own id, with its own key prefix), or None (checked on every vote).

    Every field must have its declared type (the aggregator, the log and the stores read
    it), tested with `type()` before any comparison: a `str` subclass whose `__eq__` raises
    must be a fault, not an exception out of the host's call. Counts and evidence seqs are
    bounded: `10**10000` broke the decision log line.
    """
    if type(vote) is not Vote:
        return f"returned {_short(vote)}, not a Vote"
    detector, level, count, key, message, evidence, code = vote
    if type(level) is not str or level not in LEVELS:
        return f"returned a Vote with level {_short(level)} (warn, critical or breaker)"
    if type(count) is not int:
        return f"returned a Vote whose count is {_short(count)}, not an integer"
    if not 0 <= count <= MAX_COUNT:
        return "returned a Vote whose count is not between 0 and 2**63-1"
    for name, value in (("detector", detector), ("key", key), ("message", message), ("code", code)):
        if type(value) is not str:
            return f"returned a Vote whose {name} is {_short(value)}, not a string"
    if type(evidence) is not tuple or any(type(e) is not int for e in evidence):
        return "returned a Vote whose evidence is not a tuple of integers"
    if len(evidence) > EVIDENCE_MAX or any(not 0 <= e <= MAX_COUNT for e in evidence):
        return (
            f"returned a Vote whose evidence has more than {EVIDENCE_MAX} entries or a seq "
            "outside 0..2**63-1"
        )
    if ident is not None and detector != ident:
        return f"voted under the detector id {detector[:80]!r}, not its own {ident!r}"
    if ident is not None and not key.startswith(ident + ":"):
        return f"returned a Vote whose key {key[:80]!r} does not start with {ident + ':'!r}"
    return None


def _short(value: Any) -> str:
    return safe_repr(value)[:80]


log = logging.getLogger("loopguard")

SLOW_S = 0.1  # a plugin hook call longer than this is an overrun
STOP_S = 1.0  # one call longer than this disables the detector at once
MAX_OVERRUNS = 3  # overruns after which the detector is disabled
_IMMUTABLE = (str, int, float, bool, type(None), bytes)


class Budget:
    """One plugin detector's time record, shared by every session of the process."""

    __slots__ = ("overruns", "disabled", "_lock")

    def __init__(self) -> None:
        self.overruns = 0
        self.disabled: str | None = None  # why it was disabled
        self._lock = threading.Lock()

    def spent(self, hook: str, seconds: float) -> None:
        """Count a call that took `seconds`, over `SLOW_S`; disable the detector past the budget."""
        with self._lock:
            self.overruns += 1
            if self.disabled is None and (seconds > STOP_S or self.overruns >= MAX_OVERRUNS):
                self.disabled = (
                    f"disabled for this process: its {hook} took {seconds:.2f} s "
                    f"(overrun {self.overruns}; budget {SLOW_S:g} s a call, "
                    f"{MAX_OVERRUNS} overruns or one over {STOP_S:g} s)"
                )
        if self.disabled is None:
            log.warning(
                "loopguard plugin detector %s took %.2f s, over its %g s budget "
                "(overrun %d of %d before it is disabled)",
                hook,
                seconds,
                SLOW_S,
                self.overruns,
                MAX_OVERRUNS,
            )


class Disabled(RuntimeError):
    """A plugin detector is skipped: it overran its time budget."""


# HistoryEntry's fields, in its slots' order (`snapshot` writes them out in that order)
_EntryFields = namedtuple("_EntryFields", HistoryEntry.__slots__)  # type: ignore[misc]


class EntryView(_EntryFields):
    """An immutable snapshot of one `HistoryEntry`, as a plugin reads it."""

    __slots__ = ()
    # HistoryEntry's own reads: they use only the fields
    same_as = HistoryEntry.same_as
    pending = HistoryEntry.pending
    failed = HistoryEntry.failed
    to_dict = HistoryEntry.to_dict


_new_tuple = tuple.__new__


def snapshot(entry: HistoryEntry) -> EntryView:
    """The entry's values now, in a tuple nothing can change (written out: `attrgetter` of
    eleven names measured twice as slow)."""
    return _new_tuple(
        EntryView,
        (
            entry.seq,
            entry.tool,
            entry.digest,
            entry.outcome,
            entry.run_id,
            entry.turn,
            entry.call_id,
            entry.unknown,
            entry.round,
            entry.shape,
            entry.flags,
        ),
    )


class HistoryView(Sequence[EntryView]):
    """The session's history, oldest first, read-only; each entry read is a snapshot."""

    __slots__ = ("_entries",)

    def __init__(self, entries: Sequence[HistoryEntry]) -> None:
        self._entries = entries

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [snapshot(e) for e in list(self._entries)[index]]
        return snapshot(self._entries[index])

    def __iter__(self) -> Iterator[EntryView]:
        return map(snapshot, self._entries)

    def __reversed__(self) -> Iterator[EntryView]:
        return map(snapshot, reversed(self._entries))


class BucketView:
    """One signature's entries in the index, read-only (the streak memo stays the engine's)."""

    __slots__ = ("_bucket",)

    def __init__(self, bucket: Bucket) -> None:
        self._bucket = bucket

    @property
    def entries(self) -> tuple[EntryView, ...]:
        return tuple(map(snapshot, self._bucket.entries))

    def streak(self, first_seq: int) -> tuple[int, tuple[int, ...]]:
        count, seqs = self._bucket.streak(int(first_seq))
        return count, seqs


class IndexView(Mapping[Any, BucketView]):
    """The per-signature index (`sig_key` -> entries), read-only."""

    __slots__ = ("_index",)

    def __init__(self, index: dict[Any, Bucket]) -> None:
        self._index = index

    def __getitem__(self, key: Any) -> BucketView:
        return BucketView(self._index[key])

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._index))

    def __len__(self) -> int:
        return len(self._index)


class OwnScratch(MutableMapping[str, Any]):
    """`state.scratch` as a plugin sees it: its own slot only, read and written freely."""

    __slots__ = ("_scratch", "_key")

    def __init__(self, scratch: dict[str, Any], key: str) -> None:
        self._scratch = scratch
        self._key = key

    def _mine(self, key: Any) -> bool:
        return type(key) is str and key == self._key

    def __getitem__(self, key: Any) -> Any:
        if not self._mine(key):
            raise KeyError(key)
        return self._scratch[self._key]

    def get(self, key: Any, default: Any = None) -> Any:
        return self._scratch.get(self._key, default) if self._mine(key) else default

    def __setitem__(self, key: Any, value: Any) -> None:
        if not self._mine(key):
            raise TypeError(f"a detector writes only state.scratch[{self._key!r}]")
        self._scratch[self._key] = value

    def __delitem__(self, key: Any) -> None:
        if not self._mine(key):
            raise TypeError(f"a detector writes only state.scratch[{self._key!r}]")
        del self._scratch[self._key]

    def __iter__(self) -> Iterator[str]:
        return iter([self._key] if self._key in self._scratch else [])

    def __len__(self) -> int:
        return 1 if self._key in self._scratch else 0


class StateView:
    """A read-only view of one session's `SessionState` for plugin code (see the module)."""

    __slots__ = ("_state", "_key", "_own")

    def __init__(self, state: SessionState, key: str) -> None:
        self._state = state
        self._key = key
        self._own: OwnScratch | None = None

    seq = property(attrgetter("_state.seq"))
    turn = property(attrgetter("_state.turn"))
    round = property(attrgetter("_state.round"))
    lang = property(attrgetter("_state.lang"))
    tools_closed = property(attrgetter("_state.tools_closed"))
    batch_open = property(attrgetter("_state.batch_open"))
    last_used = property(attrgetter("_state.last_used"))

    @property
    def history(self) -> HistoryView:
        return HistoryView(self._state.history)

    @property
    def index(self) -> IndexView | None:
        index = self._state.index
        return None if index is None else IndexView(index)

    @property
    def digests(self) -> tuple[bytes, ...]:
        return tuple(self._state.digests)

    @property
    def last_result(self) -> tuple[EntryView, str | None] | None:
        last = self._state.last_result
        return None if last is None else (snapshot(last[0]), last[1])

    @property
    def scratch(self) -> OwnScratch:
        if self._own is None:
            self._own = OwnScratch(self._state.scratch, self._key)
        return self._own

    @property
    def criticals(self) -> Mapping[str | None, int]:
        return MappingProxyType(self._state.criticals)

    @property
    def warned(self) -> Mapping[str, int]:
        return MappingProxyType(self._state.warned)


# Call's fields a plugin reads, in `call_view`'s order; `args` last (`CallView.args` copies it)
_CallFields = namedtuple(  # type: ignore[misc]
    "_CallFields",
    "tool canonical digest seq turn run_id call_id round outcome unknown error text flags args",
)


class CallView(_CallFields):
    """A read-only copy of the call being decided: setting a field is an AttributeError.

    `args` is a copy made from the canonical argument text each time it is read (so a plugin
    that never reads them pays nothing, and changing the copy changes nothing else); a value
    that cannot change (a text, a number) is handed over as it is.
    """

    __slots__ = ()

    @property
    def args(self) -> Any:
        value = self[13]
        if type(value) in _IMMUTABLE:
            return value
        try:
            return loads(self[1])
        except (ValueError, RecursionError):
            return self[1]

    def __repr__(self) -> str:
        return f"CallView(tool={self[0]!r}, seq={self[3]!r}, canonical={self[1][:200]!r})"


def call_view(call: Call) -> CallView:
    return _new_tuple(
        CallView,
        (
            call.tool,
            call.canonical,
            call.digest,
            call.seq,
            call.turn,
            call.run_id,
            call.call_id,
            call.round,
            call.outcome,
            call.unknown,
            call.error,
            call.text,
            call.flags,
            call.args,  # the live parsed value: `CallView.args` hands out copies of it
        ),
    )


def wrap(hook: str, method: Callable[..., Any], ident: str, budget: Budget) -> Callable[..., Any]:
    """`method` (a plugin detector's `check`, `after` or `compacted`) behind the views, the vote
    checks and the time budget. What it raises (a fault, a disabled detector) the session
    records as a fault of that detector."""
    clock = time.perf_counter
    name = f"{ident}.{hook}"

    def checked(call: Call | None, state: SessionState, cfg: Any) -> Any:
        if budget.disabled is not None:
            raise Disabled(budget.disabled)
        start = clock()
        try:
            if call is None:
                vote = method(StateView(state, ident), cfg)
            else:
                vote = method(call_view(call), StateView(state, ident), cfg)
        finally:
            took = clock() - start
            if took > SLOW_S:
                budget.spent(name, took)
        if budget.disabled is not None:
            raise Disabled(budget.disabled)
        if vote is None or call is None:
            return None
        problem = vote_problem(vote, ident)
        if problem is not None:
            raise TypeError(problem)
        return vote

    if hook == "compacted":
        return lambda state, cfg: checked(None, state, cfg)
    return checked
