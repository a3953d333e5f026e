"""Replaying recorded transcripts through a Guard: what would loopguard have decided?

Per session, in file order:
- each user message starts a turn: `session.begin_turn(messages)` with the
  conversation so far as OpenAI-style dicts (a bounded tail: the last
  messages the intent matcher reads, plus the newest user message with text);
- each tool call of an assistant message: `before_call`, then `after_call`
  with its recorded result (or error). A round's calls are fed once the round
  is over (when the next non-result event arrives), one call after the other,
  as a runtime would run them;
- an assistant message without tool calls: `session.finish_round(text)`; when
  a required tool was skipped, a `SkippedTool` record says so and whether a
  retry would have been sent;
- a compaction marker: `session.compacted()`.

The recording is fed as it happened: calls that the guard would have blocked
(critical/breaker), and calls made after a breaker closed the tools, still
reach the guard, and their records say so (`ran_despite_block`,
`after_breaker`). Input problems (a result for no known call, a call never
answered, a truncated line) come out as warning `Finding`s in the stream.
"""

from __future__ import annotations

import json
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from loopguard.decision import RANK, Decision
from loopguard.errors import InputError
from loopguard.findings import Finding
from loopguard.replay.intents import matched_keyword
from loopguard.replay.records import DROPS_DATA, DecisionRecord, Record, SessionSummary, SkippedTool
from loopguard.replay.transcripts import Transcript, open_transcript
from loopguard.replay.transcripts import events as ev
from loopguard.rules import default
from loopguard.session import answers

__all__ = ["DROPS_DATA", "DecisionRecord", "Record", "Replayer", "SessionSummary", "SkippedTool"]

_TRACKED_CALLS = 4096


@dataclass
class _Call:
    call: ev.ToolCall
    file: str
    line: int
    run_id: str | None
    result: ev.ToolResult | None = None


class _Live:
    """The state of one session being replayed."""

    def __init__(self, session: Any, name: str, tail_size: int, key: str, file: str) -> None:
        self.session = session
        self.key = key
        self.file = file  # the file it started in
        self.summary = SessionSummary(name, key=key)
        self.tail: deque[dict[str, Any]] = deque(maxlen=tail_size)
        self.last_user: dict[str, Any] | None = None
        # The round's calls by id; a repeated id gets the key (id, n): every call is fed.
        self.round: OrderedDict[Any, _Call] = OrderedDict()
        self.repeats: dict[Any, int] = {}  # per id: its calls in the round (the last n)
        self.answered: dict[Any, int] = {}  # per id: the n of its first call without a result
        self.last_seq = 0  # the newest call number the session gave


class Replayer:
    """Feeds event streams through sessions of one guard and yields records."""

    def __init__(
        self,
        guard: Any,
        agent: str | None = None,
        progress: Callable[[int], None] | None = None,
        track_calls: bool = False,
        join_sessions: bool = False,
    ) -> None:
        self.guard = guard
        self.track_calls = track_calls  # remember where recent calls came from (for explain)
        self._calls: OrderedDict[tuple[str, int], tuple[str, int, Any]] = OrderedDict()
        self.agent = agent
        self.progress = progress
        self.join_sessions = join_sessions  # a session id seen in two files is one session
        self.reported = 0  # records numbered so far (non-allow decisions and skipped tools)
        self._numbers: Counter[str] = Counter()  # per file: the last number given
        self._file_calls = 0  # tool calls read from the current file
        self._live: dict[str, _Live] = {}

    def live_session(self, key: str) -> Any:
        """The guard session of a replayed session (None once it is over); `key` as in records."""
        live = self._live.get(key)
        return None if live is None else live.session

    def _key(self, session: str, file: str) -> str:
        """Sessions are per file unless joined: the same id in two files is two sessions."""
        return session if self.join_sessions or session == file else f"{session} ({file})"

    def run(
        self, inputs: Iterable[str | Transcript], input_format: str | None = None
    ) -> Iterator[Record]:
        """Replay files (paths or opened transcripts) in order; sessions end with their events.

        A file that cannot be read yields its error `Finding`s (level "error")
        and the replay goes on with the next file.
        """
        done_bytes = 0
        for item in inputs:
            try:
                transcript = (
                    item if isinstance(item, Transcript) else open_transcript(item, input_format)
                )
            except InputError as exc:
                yield from exc.findings
                continue
            self._file_calls = 0
            try:
                for count, event in enumerate(transcript.events(), 1):
                    if isinstance(event, Finding):
                        yield from self._warn(event, None)
                    else:
                        yield from self._event(event)
                    if self.progress is not None and count % 2048 == 0:
                        self.progress(done_bytes + transcript.source.bytes_read)
            except InputError as exc:
                yield from self._end_file(transcript.source.name, incomplete=True)
                yield from exc.findings
            else:
                yield from self._end_file(transcript.source.name, incomplete=False)
                if not self._file_calls:
                    yield _no_calls(transcript)
            done_bytes += transcript.source.size
        for key in list(self._live):
            yield from self._end(key)

    def _end_file(self, file: str, incomplete: bool) -> Iterator[Record]:
        """At the end of a file, its sessions end too (unless sessions are joined across files)."""
        if self.join_sessions and not incomplete:
            return
        for key, live in list(self._live.items()):
            if live.file == file:
                live.summary.incomplete = incomplete
                yield from self._end(key)

    def position(self, session: str, seq: int) -> tuple[str, int, Any] | None:
        """(file, line, arguments) of call `seq` of a session, when `track_calls` is on."""
        return self._calls.get((session, seq))

    # -- events ----------------------------------------------------------------
    def _state(self, name: str, file: str) -> _Live:
        key = self._key(name, file)
        live = self._live.get(key)
        if live is None:
            session = self.guard.session(key, agent=self.agent)
            turn = (session.config.get("turn") or {}) if isinstance(session.config, dict) else {}
            context = turn.get("context_messages")
            if not isinstance(context, int):
                context = default("turn.context_messages")
            live = _Live(session, name, context + 2, key, file)
            self._live[key] = live
        if file and file not in live.summary.files:
            live.summary.files.append(file)
        return live

    def _event(self, event: ev.Event) -> Iterator[Record]:
        if isinstance(event, ev.EndOfSession):
            key = self._key(event.session, event.file)
            if (
                key in self._live and not self.join_sessions
            ):  # joined sessions end with the last file
                yield from self._end(key)
            return
        live = self._state(event.session, event.file)
        if isinstance(event, ev.ToolResult):
            yield from self._result(live, event)
            return
        yield from self._flush(live)
        if isinstance(event, ev.UserMessage):
            message = {"role": "user", "content": event.text}
            live.tail.append(message)
            messages = list(live.tail)
            if event.text.strip():
                live.last_user = message
            elif live.last_user is not None and live.last_user not in messages:
                messages.insert(0, live.last_user)
            live.session.begin_turn(messages)
            live.summary.turns += 1
        elif isinstance(event, ev.SystemMessage):
            live.tail.append({"role": "system", "content": event.text})
        elif isinstance(event, ev.AssistantMessage):
            live.tail.append({"role": "assistant", "content": event.text})
            self._file_calls += len(event.tool_calls)
            if event.tool_calls:
                for call in event.tool_calls:
                    slot: Any = call.id
                    n = live.repeats[call.id] = live.repeats.get(call.id, 0) + 1
                    if n > 1:  # counted, not searched: 20,000 repeats of one id took 28 s
                        slot = (call.id, n)
                        yield from self._warn(
                            _warning(
                                event.file,
                                event.line,
                                f"duplicate tool call id {call.id!r}; each call is checked, "
                                "results are matched to them in order",
                                "duplicate-call",
                            ),
                            live,
                        )
                    live.round[slot] = _Call(call, event.file, event.line, event.run_id)
            else:
                yield from self._finish_round(live, event)
        elif isinstance(event, ev.Compaction):
            live.session.compacted()

    def _result(self, live: _Live, event: ev.ToolResult) -> Iterator[Record]:
        n = live.answered.get(event.call_id, 1)  # results answer a repeated id's calls in order
        pending = live.round.get(event.call_id if n == 1 else (event.call_id, n))
        if pending is None:
            what = "a second result for" if n > 1 else "a result for"
            yield from self._warn(
                _warning(
                    event.file,
                    event.line,
                    f"{what} tool call {event.call_id!r}, which no pending call has; ignored",
                    "orphan-result",
                    "every tool result must answer a call of the assistant message before it",
                ),
                live,
            )
            return
        pending.result = event
        live.answered[event.call_id] = n + 1
        live.tail.append(
            {"role": "tool", "tool_call_id": event.call_id, "content": _text(event.content)}
        )

    def _flush(self, live: _Live) -> Iterator[Record]:
        """Feed the calls of the round that just ended, in order."""
        calls, live.round = list(live.round.values()), OrderedDict()
        live.repeats, live.answered = {}, {}
        if calls:
            live.session.begin_round()  # one response's calls are one batch
        for pending in calls:
            yield from self._feed(live, pending)

    def _feed(self, live: _Live, pending: _Call) -> Iterator[Record]:
        session, call, summary = live.session, pending.call, live.summary
        closed = bool(getattr(session, "tools_closed", False))
        before = session.before_call(
            call.name, call.arguments, call_id=call.id, run_id=pending.run_id
        )
        summary.calls += 1
        summary.after_breaker += closed
        summary.ran_despite_block += before.blocked
        # A call of a batch a breaker closed is answered before the session numbers it; its
        # recorded result numbers it (after_call records it), so its record waits for that.
        held = answers.is_aborted(before)
        if not held:
            yield from self._before(live, pending, before, closed)
        worst = before.action
        result = pending.result
        if result is None:
            if held:  # never numbered: it sorts right after the call before it
                yield from self._before(live, pending, before._replace(seq=live.last_seq), closed)
            yield from self._warn(
                _warning(
                    pending.file,
                    pending.line,
                    f"tool call {call.id!r} ({call.name}) was never answered; "
                    "fed to the guard without a result",
                    "unanswered-call",
                ),
                live,
            )
        else:
            if result.is_error:
                after = session.after_call(
                    call.name,
                    call.arguments,
                    error=_text(result.content) or "error",
                    call_id=call.id,
                    run_id=pending.run_id,
                )
            else:
                after = session.after_call(
                    call.name,
                    call.arguments,
                    result=result.content,
                    call_id=call.id,
                    run_id=pending.run_id,
                )
            if held:
                yield from self._before(live, pending, before._replace(seq=after.seq), closed)
            yield from self._decision(live, after, result.file, result.line, closed, call.arguments)
            if RANK.get(after.action, 0) > RANK.get(worst, 0):
                worst = after.action
        summary.actions[worst] += 1

    def _before(
        self, live: _Live, pending: _Call, before: Decision, closed: bool
    ) -> Iterator[Record]:
        """The record of a call's before_call decision (`before.seq` its place in the session)."""
        if self.track_calls:
            self._calls[(live.key, before.seq)] = (
                pending.file,
                pending.line,
                pending.call.arguments,
            )
            if len(self._calls) > _TRACKED_CALLS:
                self._calls.popitem(last=False)
        yield from self._decision(
            live, before, pending.file, pending.line, closed, pending.call.arguments
        )

    def _decision(
        self, live: _Live, decision: Decision, file: str, line: int, closed: bool, args: Any
    ) -> Iterator[Record]:
        live.last_seq = max(live.last_seq, decision.seq)
        if decision.action == "allow":
            if decision.phase == "before":
                yield DecisionRecord(
                    0, live.summary.session, file, line, decision, closed, args, live.key
                )
            return
        yield DecisionRecord(
            self._number(file), live.summary.session, file, line, decision, closed, args, live.key
        )

    def _number(self, file: str) -> int:
        self.reported += 1
        self._numbers[file] += 1
        return self._numbers[file]

    def _finish_round(self, live: _Live, event: ev.AssistantMessage) -> Iterator[Record]:
        outcome = live.session.finish_round(event.text)
        if outcome.problem is None or outcome.expectation is None:
            return
        exp = outcome.expectation
        live.summary.skipped += 1
        live.summary.retries += outcome.action == "retry"
        user_text = str(live.last_user["content"]) if live.last_user else ""
        keyword, keyword_set = matched_keyword(live.session.config, exp.rule, user_text)
        yield SkippedTool(
            live.summary.session,
            event.file,
            event.line,
            live.session.turn,
            exp.call,
            exp.tool,
            exp.reason,
            outcome.problem,
            outcome.action == "retry",
            outcome.retries,
            outcome.message,
            self._number(event.file),
            exp.rule,
            keyword,
            keyword_set,
            user_text,
            live.key,
        )

    def _end(self, key: str) -> Iterator[Record]:
        live = self._live[key]
        yield from self._flush(live)
        del self._live[key]
        yield live.summary

    def _warn(self, finding: Finding, live: _Live | None) -> Iterator[Record]:
        if live is not None:
            live.summary.warnings += 1
        yield finding


def _warning(file: str, line: int, message: str, code: str, hint: str = "") -> Finding:
    return Finding(file, max(line, 1), 1, "warning", message, hint=hint, code=code)


def _no_calls(transcript: Transcript) -> Finding:
    """Never pass silently: a file with no tool call checked nothing."""
    return Finding(
        transcript.source.name,
        1,
        1,
        "error",
        f"no tool calls found: the file was read as {transcript.label} ({transcript.format}) "
        "and nothing in it reached the guard",
        code="no-tool-calls",
        hint="if it is another format, pass --input-format; see the input warnings above",
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False, sort_keys=True, default=str)
