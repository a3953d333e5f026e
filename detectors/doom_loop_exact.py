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
(critical) vote. With `outcome: any` (the literal rule, used by
`builtin:portfolio`) outcomes are ignored: `threshold` occurrences of the same
call among the last `window` calls vote.

Options (their defaults are in the options schema): `window`, `threshold`,
`poll_threshold`, `outcome` (`same` | `any`), `scope` (`session` | `turn`), `level`
(`critical` | `breaker`), `exempt`, `read_only_tools`, `changing_tools`, `commentary_fields`.

Flagged: `book(x)` failing with `Error: payment does not add up`, `think(...)`,
`book(x)` with the same error, a user message, `book(x)` -> critical on the
third `book`. Not flagged: `pytest` -> 3 failed, `edit(a)`, `pytest` -> 3
failed, `edit(b)`, `pytest` -> 3 failed (other work between successes); a
status poll whose `progress` rises; three identical reads in one response.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from loopguard.detectors.support.doom import window_config, window_options
from loopguard.detectors.support.effects import (
    COMMENTARY,
    FILE,
    MISSING,
    MOVE,
    NAVIGATE,
    QUIET,
    UNREAD,
    VIEWED,
    Effects,
    FailureReader,
    missing_program,
    named_verbs,
    old_text_missing,
    replaced_text_key,
    reports_change,
)
from loopguard.plugin import (
    VETO,
    Call,
    Detector,
    HistoryEntry,
    PollMatcher,
    SessionState,
    Vote,
    hookimpl,
    setting,
    short,
)

WINDOW = 30  # calls looked at by default (the current one included): repeats spread wide

K = TypeVar("K")
V = TypeVar("V")
FAILED, STATUS = HistoryEntry.FAILED, HistoryEntry.STATUS  # bits of HistoryEntry.flags


def effect_options() -> dict[str, Any]:
    """The options that say what a call can change (see loopguard.detectors.support.effects)."""
    names = {"type": "array", "items": {"type": "string", "minLength": 1}}
    return {
        "read_only_tools": {
            **names,
            "description": "Tools that only look things up: repeats with only these "
            "between them count (added to what names and shell commands tell).",
            "default": [],
        },
        "changing_tools": {
            **names,
            "description": "Tools that can change what other calls see, whatever their names say.",
            "default": [],
        },
        "commentary_fields": {
            **names,
            "description": "Top-level argument fields that only describe a call; "
            "they do not make two calls different.",
            "default": list(COMMENTARY),
        },
    }


def effects_of(options: Mapping[str, Any]) -> Effects:
    """The compiled `effect_options`."""
    return Effects(
        options["read_only_tools"] or (),
        options["changing_tools"] or (),
        options["commentary_fields"] or (),
    )


class Trail:
    """Per session: what each recent call could do (`effects`), and user turns that report
    a change. A call noted with nothing to say, or not noted, counts as changing.

    It is kept in every idle session, so it is small: the flags of the newest
    `RECENT_MARKS` calls in a ring of bytes (call `seq` at `seq % RECENT_MARKS`), the rare
    core digests in a dict made when the first one comes, and empty tuples, not lists,
    for what most sessions never record.
    """

    __slots__ = (
        "ring",
        "newest",
        "cores",
        "turn",
        "told",
        "remedies",
        "edits",
        "unfound",
        "programs",
        "again",
    )

    def __init__(self) -> None:
        self.ring = bytearray(RECENT_MARKS)  # flags of calls newest - RECENT_MARKS + 1 .. newest
        self.newest = -1  # the newest call noted
        self.cores: dict[int, bytes] | None = None  # seq -> core digest (what it is a repeat of)
        self.turn = -1  # the newest turn whose user message was read
        self.told: tuple[int, ...] = ()  # turns whose user message reports a change
        self.remedies: frozenset[str] = frozenset()  # look-up verbs the newest failure names
        # Replacing edits still running (seq -> what they look for), and what the newest
        # failed ones looked for and did not find: a new text alone cannot change that.
        self.edits: dict[int, bytes] | None = None
        self.unfound: tuple[bytes, ...] = ()
        self.programs: dict[int, str] | None = None  # seq -> program of newest changing calls
        # The newest walks' verdicts by core digest, for a later call to take over (`_again`).
        self.again: dict[bytes, tuple[Any, ...]] | None = None

    def flags(self, seq: int) -> int:
        """The flags noted for call `seq` (0: nothing noted, or too old to be kept)."""
        if self.newest - RECENT_MARKS < seq <= self.newest:
            return self.ring[seq % RECENT_MARKS]
        return 0

    def core(self, seq: int) -> bytes | None:
        """The core digest noted for call `seq`, if any."""
        cores = self.cores
        if cores is None or not self.newest - RECENT_MARKS < seq <= self.newest:
            return None
        return cores.get(seq)

    def note(self, seq: int, flags: int, core: bytes | None) -> None:
        """Remember what call `seq` can do; calls skipped since the newest are cleared."""
        newest = self.newest
        ring = self.ring
        if seq > newest:
            for skipped in range(max(newest + 1, seq - RECENT_MARKS + 1), seq):
                ring[skipped % RECENT_MARKS] = 0  # an exempt tool, or a call not asked about
            self.newest = newest = seq
        elif seq <= newest - RECENT_MARKS:
            return  # older than anything kept
        ring[seq % RECENT_MARKS] = flags
        cores = self.cores
        if core is not None:
            if cores is None:
                cores = self.cores = {}
            cores[seq] = core
        elif cores:
            cores.pop(seq, None)
        while cores and next(iter(cores)) <= newest - RECENT_MARKS:
            del cores[next(iter(cores))]  # (seqs come in order: the oldest is first)

    def program(self, seq: int) -> str | None:
        """The program changing call `seq` ran (shell calls), if noted."""
        programs = self.programs
        return None if programs is None else programs.get(seq)


RECENT_MARKS = 64  # history.RECENT: a window never reaches further back
_WALK = object()  # `_again`: the walk must be taken
AGAIN_KEPT = 4  # walks remembered for a later call to take over (a ping-pong needs two)


def remember(
    trail: Trail,
    call: Call,
    cfg: Any,
    flags: int,
    core: bytes,
    seqs: list[int] | None = None,
    used: int = 0,
    what: str = "",
) -> None:
    """Keep a walk's verdict for the next occurrence of `core` (see `DoomLoopExact._again`):
    the occurrences it counted (newest first; None: it found no known outcome), the window
    it used, and what its message says of them."""
    verdict = (
        call.seq,
        cfg,
        flags,
        call.digest,
        call.run_id,
        call.turn,
        trail.told,
        seqs,
        used,
        what,
    )
    trail.again = keep_newest(trail.again, core, verdict, AGAIN_KEPT)


def keep_newest(marks: dict[K, V] | None, key: K, value: V, most: int) -> dict[K, V]:
    """`marks` (a new dict when None) with `key: value` added and, beyond `most` entries, the
    oldest dropped: the Trail's small records, made when the first entry comes."""
    if marks is None:
        marks = {}
    marks[key] = value
    if len(marks) > most:
        del marks[next(iter(marks))]
    return marks


EXACT = "doom_loop_exact"
EDITS_KEPT = 8  # replacing edits in flight, and old texts not found, remembered
ATTEMPT = 128  # (a mark's flags) a call that could have changed something, and failed


def quiet(trail: Trail, seq: int) -> bool:
    """Whether call `seq` changed nothing: a look-up, or a call that failed."""
    return bool(trail.flags(seq) & QUIET)


class DoomLoopExact(Detector):
    id = EXACT
    levels = ("warn", "critical", "breaker")
    reads_outcomes = True
    # Asked about every call: it notes what each call could change, for later repeats.
    repeats_only = False
    settings = (
        "outcomes.failure_prefixes",
        "outcomes.failure_markers",
        "outcomes.near_similarity",
    )
    bounded_by = (("threshold", "window"),)
    scratch_codec = "custom"
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
            **window_options(WINDOW),
            "poll_threshold": {
                "description": "The threshold for polls (results that report "
                "progress), which may wait longer.",
                "type": "integer",
                "minimum": 1,
                "default": 6,
            },
            **effect_options(),
        },
        "additionalProperties": False,
    }

    def configure(self, options: Mapping[str, Any], config: Mapping[str, Any]) -> Any:
        merged = {**self.option_defaults(), **options}
        return {
            **window_config(merged),
            "poll_threshold": int(merged["poll_threshold"]),
            "polls": PollMatcher.from_config(config),
            "effects": effects_of(merged),
            "failures": FailureReader(
                setting(config, "outcomes.failure_prefixes") or (),
                setting(config, "outcomes.failure_markers") or (),
            ),
        }

    def encode_scratch(self, value: Any) -> Any:
        """[turn, told turns, [[seq, flags, core digest hex or null], ...], remedy verbs,
        [[seq, edit key hex], ...], [unfound key hex, ...], [[seq, program], ...]]."""
        if not isinstance(value, Trail):
            return None
        marks = []
        for seq in range(max(0, value.newest - RECENT_MARKS + 1), value.newest + 1):
            flags, core = value.flags(seq), value.core(seq)
            if flags or core is not None:
                marks.append([seq, flags, None if core is None else core.hex()])
        return [
            value.turn,
            list(value.told),
            marks,
            sorted(value.remedies),
            [[s, k.hex()] for s, k in (value.edits or {}).items()],
            [k.hex() for k in value.unfound],
            [[s, w] for s, w in (value.programs or {}).items()],
        ]

    def decode_scratch(self, data: Any) -> Any:
        trail = Trail()
        trail.turn, trail.told = int(data[0]), tuple(int(t) for t in data[1])
        trail.remedies = frozenset(str(v) for v in data[3]) if len(data) > 3 else frozenset()
        for seq, flags, core in sorted(data[2], key=lambda mark: int(mark[0])):
            trail.note(int(seq), int(flags), None if core is None else bytes.fromhex(core))
        if len(data) > 5 and data[4]:  # (stored before replacing edits were followed: none)
            trail.edits = {int(s): bytes.fromhex(k) for s, k in data[4]}
        if len(data) > 5:
            trail.unfound = tuple(bytes.fromhex(k) for k in data[5])
        if len(data) > 6 and data[6]:
            trail.programs = {int(s): str(w) for s, w in data[6]}
        return trail

    def check(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        exempt = cfg["exempt"]
        if call.tool in exempt:
            return None
        trail = state.scratch.get(self.id)
        if trail is None:
            trail = state.scratch[self.id] = Trail()
        effects = cfg["effects"]
        flags, core = effects.classify(call.tool, call.args, call.digest, call.seen)
        if flags & QUIET and trail.remedies and effects.verb(call.tool) in trail.remedies:
            flags = 0  # the newest failure named this look-up as its remedy (`Read it first`)
        if call.turn != trail.turn:
            trail.turn = call.turn
            ts = state.turn_state
            if ts is not None and reports_change(ts.user_text):
                trail.told = (*trail.told[-15:], call.turn)
        looked_for = replaced_text_key(call.tool, call.args)
        if looked_for is not None:
            trail.edits = keep_newest(trail.edits, call.seq, looked_for, EDITS_KEPT)
            if looked_for in trail.unfound:
                core = looked_for  # its old text was not found: a new text changes nothing
        if not flags & QUIET:  # an attempt: what it runs, for the attempts it may be among
            program = effects.program(call.tool, call.args)
            if program is not None:
                trail.programs = keep_newest(trail.programs, call.seq, program, RECENT_MARKS)
        if call.seq == trail.newest + 1 and core is None and not trail.cores:
            trail.ring[call.seq % RECENT_MARKS] = flags  # Trail.note, the common case inlined
            trail.newest = call.seq
        else:
            trail.note(call.seq, flags, core)
        if core is None:
            if not call.seen:
                return None  # not seen lately: no repeat
            core = call.digest
        if trail.again is not None:
            again = trail.again.pop(core, None)
            if again is not None:
                vote = self._again(call, state, cfg, trail, flags, core, again)
                if vote is not _WALK:
                    return vote
        return self._walk(call, state, cfg, trail, flags, core)

    def after(self, call: Call, state: SessionState, cfg: Any) -> Vote | None:
        """A call that failed did not do its work: whatever its kind, it changed nothing.
        A failure that names a look-up (`Read the file first`) makes that look-up a change."""
        trail = state.scratch.get(self.id)
        if trail is None:
            return None
        trail.again = None  # a result came in: what the walks read may have changed
        looked_for = trail.edits.pop(call.seq, None) if trail.edits else None
        if call.error is None and not call.flags & FAILED:
            if not call.flags & UNREAD or trail.flags(call.seq) & QUIET:
                return None  # a success the engine has read, or a look-up: nothing to learn
        if call.tool in cfg["exempt"] or call.outcome == VETO:
            return None
        flags, core = trail.flags(call.seq), trail.core(call.seq)
        text = call.text or ""
        # (left: a failure, or an attempt's first result, read now)
        if call.error is None and not call.flags & FAILED and not cfg["failures"].failed(text):
            return None
        trail.remedies = named_verbs(text)
        if looked_for is not None and old_text_missing(text):
            core = looked_for  # what it looked for is not there: its new text does not matter
            if looked_for not in trail.unfound:
                trail.unfound = (*trail.unfound[1 - EDITS_KEPT :], looked_for)
        attempt = 0 if flags & QUIET else ATTEMPT
        trail.note(call.seq, QUIET | attempt | (MISSING if missing_program(text) else 0), core)
        return None

    def _walk(
        self, call: Call, state: SessionState, cfg: Any, trail: Trail, flags: int, core: bytes
    ) -> Vote | None:
        # Walk the window's earlier calls, newest first: the last `window - 1` calls of the
        # session (of the turn with `scope: turn`), calls of exempt tools skipped. An earlier
        # occurrence counts only when nothing between it and the newer one could have
        # changed the outcome: only quiet calls (look-ups) ran between, and no user message
        # between reports a change.
        exempt, told = cfg["exempt"], trail.told
        ring, newest, cores = trail.ring, trail.newest, trail.cores
        turn, turn_scope = call.turn, cfg["turn_scope"]
        same = cfg["same"]
        left = cfg["window"] - 1
        seqs = [call.seq]  # the current call and the earlier occurrences counted
        batch: list[int] = []  # identical calls asked for in the same response
        ref: bytes | None = None
        edited = False  # files changed since the newer occurrence (nothing else did)
        between = False  # any other call since the newer occurrence
        newer_turn = turn  # the turn of the newest counted occurrence
        failed = False
        changed = False  # a change ran since the newer occurrence (it may be crossed)
        variants: set[bytes | None] = set()  # outcomes of new variants of it failing between
        poll: bool | None = (
            False  # None: known only as "not a status", a declared poll is asked when it matters
        )
        counted_round = -1
        # Moves of an editor's view change nothing a call sees unless it looks through it.
        unaffected = QUIET if flags & VIEWED else QUIET | NAVIGATE
        # The same edit applied again straight away changes nothing new, whatever it echoes
        # back (SWE-agent's `edit 5:9` shows the file it has just grown by the same lines).
        rewrite = same and bool(flags & FILE)
        echoed = False  # a counted rewrite returned another text
        fragile = False  # whether the next call could not take this walk's verdict over
        ref_count = -1  # occurrences counted when the first known outcome was
        for entry in reversed(state.history):
            if left <= 0 or (turn_scope and entry.turn != turn):
                break
            if entry.tool in exempt:
                continue
            left -= 1
            seq = entry.seq
            if newest - RECENT_MARKS < seq <= newest:  # Trail.flags and Trail.core, inlined
                mark = ring[seq % RECENT_MARKS]
                core_of = None if cores is None else cores.get(seq)
                key = entry.digest if core_of is None else core_of
            else:
                mark, key = 0, entry.digest
            if key != core or (same and entry.run_id != call.run_id):
                between = True
                rewrite = False
                if (
                    same
                    and mark & ATTEMPT
                    and not flags & QUIET
                    and entry.tool == call.tool
                    and trail.program(seq) == trail.program(call.seq)
                ):
                    fragile = True  # (the digests counted here change with every new call)
                    if state.digests.count(entry.digest) == 1:
                        variants.add(entry.outcome)  # a new variant of this attempt failed between
                if not mark & unaffected:
                    if same and mark & FILE:
                        edited = True  # an edit: it cannot make a missing program appear
                    elif same and failed and not changed:
                        changed = True  # crossed only if the call failed the same way before
                    elif same:
                        break  # something that could change the outcome ran between
                continue
            if entry.round == call.round:
                batch.append(entry.seq)
                continue
            if entry.round == counted_round:
                continue  # one response asking twice is one occurrence
            if not same:  # `outcome: any`: every occurrence in the window counts
                seqs.append(entry.seq)
                counted_round = entry.round
                continue
            if entry.turn != newer_turn and any(entry.turn < t <= newer_turn for t in told):
                break  # a user message between reports a change: a re-check
            if edited and not mark & MISSING:
                break  # files changed since, and the outcome could depend on them
            if variants:
                if any(v != entry.outcome for v in variants):
                    break  # new variants failed otherwise between: the agent explores
                variants.clear()  # they failed the same way: the same loop
            if changed:
                # A change ran between this occurrence and a newer one, and the newer one
                # failed all the same: if this one failed that way too, the change did not
                # touch the outcome, and it is crossed.
                shape = entry.shape if entry.shape is not None else entry.outcome
                if shape != ref or not entry.flags & FAILED:
                    break
                changed = False
            if between and (
                entry.flags & STATUS
                or (poll is not False and cfg["polls"].matches(call.tool, call.args))
            ):
                break  # time changes a poll's answer: checking it between other work is fine
            edited = between = False
            outcome = entry.shape if entry.shape is not None else entry.outcome
            if outcome is None:
                break  # still running: nothing known yet
            if outcome != VETO:  # a blocked call counts as the outcome it blocked
                if ref is None:
                    ref, failed = outcome, bool(entry.flags & FAILED)
                    ref_count = len(seqs) + 1
                    poll = False if rewrite else True if entry.flags & STATUS else None
                    if flags & MOVE and not failed:
                        return None  # a relative move (`cd ..`) goes somewhere new each time
                elif outcome != ref:
                    if not rewrite or entry.digest != call.digest:
                        break  # (a rewrite only with the very same arguments)
                    echoed = True  # the same edit again: what it echoes back does not matter
            seqs.append(entry.seq)
            counted_round = entry.round
            newer_turn = entry.turn
            if ref is not None:
                if poll is None:
                    poll = cfg["polls"].matches(call.tool, call.args)
                if len(seqs) >= (cfg["poll_threshold"] if poll else cfg["threshold"]):
                    break  # enough: a vote needs no more evidence than its threshold
        count = len(seqs)
        if poll is None:  # below both thresholds it cannot matter
            poll = count >= min(cfg["threshold"], cfg["poll_threshold"]) and cfg["polls"].matches(
                call.tool, call.args
            )
        needed = cfg["poll_threshold"] if poll else cfg["threshold"]
        if count < needed or (same and ref is None):
            if batch:
                return self._batch_warning(call, batch)
            if same and ref is None and not fragile:
                # No known outcome in reach: a later occurrence after this one, blocked, and
                # look-ups finds none either (its walk reaches no further back; `_again`).
                remember(trail, call, cfg, flags, core)
            return None
        if not same:
            what = f"in the last {cfg['window']} calls"
        elif echoed:
            what = "in a row: the same change again, whatever its result says"
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
        if count == ref_count and not fragile:
            # The walk stopped at the first known outcome: a later call, if it is this one
            # again and this one is blocked, walks to the same place (`_again`).
            remember(trail, call, cfg, flags, core, seqs, cfg["window"] - 1 - left, what)
        return self._repeat(call, cfg, seqs, what)

    def _repeat(self, call: Call, cfg: Any, seqs: list[int], what: str) -> Vote:
        """The vote on a repeat counted at `seqs` (newest first)."""
        return self.vote(
            cfg["level"],
            len(seqs),
            short(call.digest),
            f"{call.tool} was called {len(seqs)} times with the same arguments {what}.",
            tuple(reversed(seqs)),
        )

    def _again(
        self,
        call: Call,
        state: SessionState,
        cfg: Any,
        trail: Trail,
        flags: int,
        core: bytes,
        again: tuple[Any, ...],
    ) -> Any:
        """The vote (or None) `_walk` would give, taken over from an earlier walk of this
        call; `_WALK` when it cannot be.

        When that call was this very call (same digest, flags, run and turn; another
        response), was blocked, only look-ups of other calls ran since, and no result has
        come in since (`after` forgets these verdicts), the walk meets those look-ups, then
        that call, counts it (a veto counts as the outcome it blocked) and goes exactly the
        earlier walk's way to the outcome it stopped at: one occurrence more, the same
        message. An earlier walk that found no known outcome (`seqs` None) finds none again:
        no vote. A blocked loop then costs a step or two, not the window.
        """
        seq, was_cfg, was_flags, digest, run_id, turn, told, seqs, used, what = again
        history = state.history
        if not (
            was_cfg is cfg
            and was_flags == flags
            and digest == call.digest
            and run_id == call.run_id
            # another turn only when no user message reported a change since (`told` is a new
            # tuple whenever one does), and the window spans turns
            and (turn == call.turn or (told is trail.told and not cfg["turn_scope"]))
            and history
            and (seqs is None or history[0].seq <= seqs[-1])  # (its outcome still recorded)
        ):
            return _WALK
        exempt = cfg["exempt"]
        unaffected = QUIET if flags & VIEWED else QUIET | NAVIGATE
        steps = 0  # calls since that one, in the window
        for entry in reversed(history):  # (the steps `_walk` takes before it, checked alike)
            if entry.seq <= seq:
                break
            if entry.tool in exempt:
                continue
            steps += 1
            mark = trail.flags(entry.seq)
            if (
                (trail.core(entry.seq) or entry.digest) == core and entry.run_id == call.run_id
            ) or not mark & unaffected:
                return _WALK  # another occurrence, or a call that may change the outcome
            if mark & ATTEMPT and not flags & QUIET and entry.tool == call.tool:
                return _WALK  # perhaps a new variant of this attempt
        else:
            return _WALK
        if (
            entry.seq != seq
            or entry.outcome != VETO
            or entry.flags & STATUS
            or entry.round == call.round
            or (steps and flags & FILE)  # (`_walk`'s rewrite case would end otherwise)
        ):
            return _WALK
        if seqs is None:  # no known outcome in reach then, nor now
            remember(trail, call, cfg, flags, core)
            return None
        if steps + 1 + used > cfg["window"] - 1:
            return _WALK  # the walk would not reach that outcome
        seqs = [call.seq, *seqs]
        remember(trail, call, cfg, flags, core, seqs, steps + 1 + used, what)
        return self._repeat(call, cfg, seqs, what)

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
