"""One hook event in, one answer out: the process `loopguard hook DIALECT` runs.

The agent starts it for every event with the event's JSON on stdin. It reads the event
(at most `MAX_EVENT_BYTES`), takes the session's lock, builds the guard (`guardcache`),
maps the event onto the Session API, remembers what spans events (`journal`) and prints
the dialect's answer. It never breaks the agent: any problem (unreadable event, broken
rules, a locked or damaged state file, a bug) allows the call, exits 0, writes one line
to stderr and one to `hooks.log`.

Rounds: where the agent reports the end of a response's calls (Claude Code's
`PostToolBatch`), a round runs from the first call after a boundary to that event. Where
it does not, a call that starts while calls are still open (started, not yet reported
back) joins their round; a call that starts when none is open begins a new round. A
prompt, a stop and a compaction close the round.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from loopguard.hooks import event as ev
from loopguard.hooks import guardcache, journal, paths
from loopguard.hooks.dialects import DIALECTS
from loopguard.hooks.dialects.base import Dialect
from loopguard.hooks.event import Answer, EventError, HookEvent, Rendered
from loopguard.hooks.journal import LogRow, call_key
from loopguard.session import answers
from loopguard.stores import store_from_config
from loopguard.stores.sqlite import SqliteStore

LOG_ROTATE_BYTES = 1024 * 1024  # hooks.log is moved to hooks.log.1 past this size
_NAMES = "|".join(DIALECTS)
USAGE = f"usage: loopguard hook {{{_NAMES}}} [--rules R] [--agent NAME] [--event NAME]"


@dataclass(frozen=True)
class Options:
    dialect: Dialect
    rules: str | None = None
    agent: str | None = None
    event: str | None = None  # the event's name, for payloads that do not carry it


class UsageError(ValueError):
    pass


def parse_options(argv: list[str]) -> Options:
    """`DIALECT [--rules R] [--agent NAME] [--event NAME]` (no argparse: it runs per call)."""
    if not argv or argv[0] not in DIALECTS:
        raise UsageError(USAGE)
    values: dict[str, str] = {}
    rest = argv[1:]
    while rest:
        flag, *rest = rest
        name, eq, value = flag.partition("=")
        if name not in ("--rules", "--agent", "--event"):
            raise UsageError(f"loopguard hook: unknown option {flag!r}\n{USAGE}")
        if not eq:
            if not rest:
                raise UsageError(f"loopguard hook: {name} needs a value\n{USAGE}")
            value, *rest = rest
        values[name[2:]] = value
    return Options(DIALECTS[argv[0]], values.get("rules"), values.get("agent"), values.get("event"))


def main(argv: list[str], stdin: IO[bytes] | None = None, stdout: IO[str] | None = None) -> int:
    """Run the hook for `argv` (the words after `loopguard hook`); the process's exit code."""
    out = stdout if stdout is not None else sys.stdout
    try:
        options = parse_options(argv)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return 1  # not 2: Claude Code and Codex read exit code 2 as "block the call"
    try:
        raw = _read(stdin if stdin is not None else sys.stdin.buffer)
        payload = json.loads(raw)
        event = options.dialect.read(payload, options.event)
    except (EventError, ValueError, RecursionError) as exc:
        return _fail_open(out, options, None, f"cannot read the event: {_short(exc)}")
    if event.kind == ev.IGNORED:
        return _emit(out, Rendered({}))
    try:
        rendered = handle(options, event)
    except BaseException as exc:  # noqa: BLE001 - the agent must never be broken by the guard
        if isinstance(exc, KeyboardInterrupt):
            return _fail_open(out, options, event, "interrupted")
        return _fail_open(out, options, event, f"{type(exc).__name__}: {_short(exc)}")
    return _emit(out, rendered)


def handle(options: Options, event: HookEvent) -> Rendered:
    """Decide one event: lock the session, build the guard, apply, remember, answer."""
    folder = paths.state_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    built = guardcache.build(
        _rules(options, event),
        paths.cache_dir(),
        _make_store,
        f"{os.environ.get(paths.STORE_ENV, '')}\0{paths.database()}",
    )
    with journal.lock(folder, event.session):  # only the session's own steps wait for it
        book = journal.Journal(paths.database())
        try:
            state = book.load(event.session)
            answer = Answer()
            if built.problems:
                _report_problems(built, state, answer, options, event)
            if built.guard is not None:
                rows = _apply(built.guard, options, event, state, answer)
                for row in rows:
                    book.log(event.session, row)
            if event.kind == ev.SESSION_END:
                book.forget(event.session)
            else:
                book.save(event.session, state)
            book.maybe_purge(time.time())
        finally:
            book.close()
    return options.dialect.render(event, answer)


# -- the Session API, event by event -----------------------------------------------
def _apply(
    guard: Any, options: Options, event: HookEvent, state: journal.HookState, answer: Answer
) -> list[LogRow]:
    """Map `event` onto the session; fill `answer`; the decisions to log."""
    session = guard.session(event.session, options.agent)
    kind = event.kind
    now = time.time()

    def close_round() -> None:
        if state.round_open:
            session.end_round()
        state.round_open = False
        state.open.clear()

    def row(action: str, detector: str | None = None, message: str | None = None) -> LogRow:
        return LogRow(
            now,
            options.dialect.name,
            event.name,
            event.tool,
            event.call_id,
            action,
            detector,
            message,
        )

    if kind == ev.PROMPT:
        close_round()
        state.notes.clear()
        state.closed = None
        session.begin_turn([{"role": "user", "content": event.prompt}])
        return []
    if kind == ev.PRE:
        state.drop_stale(now)
        if not options.dialect.batches and not state.open:
            close_round()
        if not state.round_open:
            session.begin_round()
            state.round_open = True
        if state.closed is not None and not options.dialect.ends_turn:
            # the agent cannot end its turn from a hook: a breaker denies every further call
            answer.deny = state.closed
            return [row("closed", None, state.closed)]
        decision = session.before_call(event.tool, event.args, call_id=event.call_id)
        key = call_key(event.call_id, event.tool, event.args)
        refused = answers.tool_result(decision)
        if refused is None:
            state.open[key] = now
            if answers.note_shown(decision) and decision.message:
                state.notes[key] = decision.message
        else:
            answer.deny = refused
        if decision.action == "breaker":
            answer.end_turn = answers.stop_text(None, decision)
            answer.closed = True
            state.closed = refused
        return [row(decision.action, decision.detector, decision.message)]
    if kind in (ev.POST, ev.FAILURE):
        key = call_key(event.call_id, event.tool, event.args)
        state.open.pop(key, None)
        decision = session.after_call(
            event.tool, event.args, result=event.result, error=event.error, call_id=event.call_id
        )
        notes = [state.notes.pop(key, "")]
        if answers.note_shown(decision) and decision.message:
            notes.append(decision.message)
        answer.context = "\n\n".join(n for n in notes if n) or None
        if decision.action == "breaker":
            answer.end_turn = answers.stop_text(None, decision)
            answer.closed = True
            state.closed = answers.tool_result(decision)
        outcome = "failed" if kind == ev.FAILURE else "ran"
        return [row(f"{outcome}:{decision.action}", decision.detector, decision.message)]
    if kind == ev.BATCH_END:
        close_round()
        return []
    if kind == ev.STOP:
        close_round()
        closed = session.tools_closed
        outcome = session.finish_round(event.text)
        if outcome.action == "retry":
            answer.retry = outcome.message or ""
            return [row("retry", None, answer.retry)]
        final = outcome.text or ""
        if not closed and final != (event.text or ""):
            text = event.text or ""
            answer.user = final[: len(final) - len(text)].strip() if final.endswith(text) else final
        return []
    if kind == ev.COMPACT:
        close_round()
        session.compacted()
        return [row("compacted")]
    if kind == ev.PERMISSION:
        answer.closed = session.tools_closed
        if answer.closed:
            answer.deny = "loopguard: this turn's tool calls were stopped (a tool-call loop)"
        return []
    if kind == ev.SESSION_END:
        # the state stays until it expires (the store's idle TTL): `claude -p --resume` and
        # Gemini's --resume continue a session id after its SessionEnd, loops included
        close_round()
        return [row("session_end")]
    return []


# -- rules, stores -------------------------------------------------------------------
def _rules(options: Options, event: HookEvent) -> str:
    """`--rules`, else LOOPGUARD_RULES, else the project's loopguard.yaml, else the default."""
    if options.rules:
        return options.rules
    if os.environ.get(paths.RULES_ENV):
        return os.environ[paths.RULES_ENV]
    folders = [os.environ.get(name) for name in paths.PROJECT_ENVS] + [event.cwd]
    for folder in folders:
        if folder and os.path.isabs(folder):
            for name in paths.RULES_FILES:
                candidate = os.path.join(folder, name)
                if os.path.isfile(candidate):
                    return candidate
    return "builtin:default"


def _make_store(rules: dict[str, Any]) -> Any:
    """LOOPGUARD_STORE, else the rules' `store:` block (None: the Guard builds it), else
    hooks.db: a hook's sessions must outlive its process."""
    value = os.environ.get(paths.STORE_ENV, "")
    if not value:
        if isinstance(rules.get("store"), dict):
            return None
        return SqliteStore(paths.database(), fail_mode="open")
    if "://" in value and not value.startswith("sqlite:"):
        return store_from_config({"url": value, "fail_mode": "open"}, paths.STORE_ENV)
    path = value.removeprefix("sqlite:").removeprefix("//")
    return store_from_config({"path": path, "fail_mode": "open"}, paths.STORE_ENV)


def _report_problems(
    built: Any, state: journal.HookState, answer: Answer, options: Options, event: HookEvent
) -> None:
    """Show the rules' problems to the user once per session (on the first event whose
    answer the agent shows: not a session's start or end); on stderr every time."""
    unguarded = built.guard is None
    what = "cannot be loaded, so tool calls are not guarded" if unguarded else "have errors"
    first = built.problems[0]
    more = f" (+{len(built.problems) - 1} more)" if len(built.problems) > 1 else ""
    line = f"loopguard: the rules {built.source} {what}: {first}{more}"
    print(line, file=sys.stderr)
    digest = hashlib.blake2b("\n".join(built.problems).encode(), digest_size=8).hexdigest()
    if event.kind not in _UNSHOWN and digest not in state.reported:
        state.reported.append(digest)
        answer.user = f"{line}. Run: loopguard lint {built.source}"
        _log_line(options, event, line)


_UNSHOWN = (ev.SESSION_START, ev.SESSION_END)  # Claude Code shows no systemMessage of these


# -- output and failure --------------------------------------------------------------
def _read(stream: IO[bytes]) -> str:
    limit = paths.MAX_EVENT_BYTES
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise EventError(f"the event is larger than {limit // (1024 * 1024)} MiB")
    if not data.strip():
        raise EventError("no event on stdin")
    return data.decode("utf-8", "surrogateescape")


def _emit(out: IO[str], rendered: Rendered) -> int:
    if rendered.output is not None:
        out.write(json.dumps(rendered.output, ensure_ascii=True) + "\n")
        out.flush()
    if rendered.stderr:
        print(rendered.stderr, file=sys.stderr)
    return rendered.exit_code


def _fail_open(out: IO[str], options: Options, event: HookEvent | None, why: str) -> int:
    """Allow the call: `{}` on stdout, exit 0, one line on stderr and in hooks.log."""
    line = f"loopguard hook {options.dialect.name}: {why} (the call is allowed)"
    try:
        print(line, file=sys.stderr)
    except (OSError, ValueError):
        pass
    _log_line(options, event, why)
    try:
        out.write("{}\n")
        out.flush()
    except (OSError, ValueError):
        pass
    return 0


def _log_line(options: Options, event: HookEvent | None, text: str) -> None:
    """One line in hooks.log (moved to hooks.log.1 when large); never raises."""
    try:
        path: Path = paths.log_file()
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if path.exists() and path.stat().st_size > LOG_ROTATE_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        where = f"{event.name} session={event.session}" if event is not None else "-"
        safe = text.encode("unicode_escape").decode("ascii")[:2000]
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"{stamp} {options.dialect.name} {where}: {safe}\n")
    except (OSError, ValueError):
        pass


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__
