"""The hook's own bookkeeping in hooks.db, beside the sessions' state, and the per-session lock.

A hook process lives for one event, so what spans events lives here, per session key:
- `round_open`: the calls of a model response are being seen (a round is open);
- `open`: calls that started and have not reported back (dialects without a batch-end
  event form rounds from them: a call that starts while others are open joins their round);
- `notes`: a warning the guard gave before a call, shown with that call's result;
- `reported`: the rules problems already shown to the user in this session;
- `closed`: the breaker's answer, repeated to every later call of the turn where the agent
  cannot end a turn from a hook (Codex, Cursor).
`log` keeps the last `LOG_KEPT` decisions per session for `loopguard hook status`.

Every event of one session runs under `lock(key)` (an exclusive `flock` on one of
`STRIPES` lock files), so concurrent hook processes of one response never interleave:
no call is lost or counted twice, and round boundaries are decided in arrival order.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STRIPES = 64  # lock files; sessions share one only by hash collision (then they just take turns)
LOCK_WAIT_S = 10.0  # then the event runs unlocked (the store's compare-and-set still holds)
LOG_KEPT = 200  # decisions kept per session
OPEN_STALE_S = 900.0  # a call open this long is taken as finished (its post event was lost)
TTL_S = 6 * 3600.0  # bookkeeping and log of a session idle this long are purged
_PURGE_ONE_IN = 200  # events between purges, on average

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS loopguard_hook_state (key TEXT PRIMARY KEY, state TEXT NOT NULL, "
    "updated REAL NOT NULL) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS loopguard_hook_log (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "key TEXT NOT NULL, ts REAL NOT NULL, dialect TEXT, event TEXT, tool TEXT, call_id TEXT, "
    "action TEXT, detector TEXT, message TEXT)",
    "CREATE INDEX IF NOT EXISTS loopguard_hook_log_key ON loopguard_hook_log (key, id)",
)


@dataclass
class HookState:
    """What the hook remembers of one session between events."""

    round_open: bool = False
    open: dict[str, float] = field(default_factory=dict)  # call key -> when it started
    notes: dict[str, str] = field(default_factory=dict)  # call key -> note to show after it
    reported: list[str] = field(default_factory=list)  # digests of rules problems shown
    closed: str | None = None  # a breaker closed the turn's tools: what later calls are told

    @classmethod
    def from_json(cls, text: str) -> HookState:
        """The stored form; anything unreadable is a fresh state (never an exception)."""
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return cls()
        if not isinstance(data, dict):
            return cls()
        opened = data.get("open")
        notes = data.get("notes")
        reported = data.get("reported")
        closed = data.get("closed")
        return cls(
            data.get("round_open") is True,
            {
                str(k): float(v)
                for k, v in (opened.items() if isinstance(opened, dict) else ())
                if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v
            },
            {
                str(k): v
                for k, v in (notes.items() if isinstance(notes, dict) else ())
                if isinstance(v, str)
            },
            [v for v in reported if isinstance(v, str)] if isinstance(reported, list) else [],
            closed if isinstance(closed, str) else None,
        )

    def to_json(self) -> str:
        return json.dumps(
            {
                "round_open": self.round_open,
                "open": self.open,
                "notes": self.notes,
                "reported": self.reported[-16:],
                "closed": self.closed,
            }
        )

    def drop_stale(self, now: float) -> None:
        self.open = {k: t for k, t in self.open.items() if now - t < OPEN_STALE_S}


@dataclass(frozen=True)
class LogRow:
    """One decision of the log (what `loopguard hook status` shows)."""

    ts: float
    dialect: str
    event: str
    tool: str
    call_id: str | None
    action: str
    detector: str | None
    message: str | None


class Journal:
    """The bookkeeping tables of one hooks.db."""

    def __init__(self, path: Path, busy_timeout_s: float = 5.0) -> None:
        self.path = path
        self._db = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            for statement in _SCHEMA:
                self._db.execute(statement)
        except BaseException:  # a damaged or locked file: never leave the connection open
            self._db.close()
            raise

    def close(self) -> None:
        self._db.close()

    def load(self, key: str) -> HookState:
        row = self._db.execute(
            "SELECT state FROM loopguard_hook_state WHERE key = ?", (key,)
        ).fetchone()
        return HookState.from_json(row[0]) if row and isinstance(row[0], str) else HookState()

    def save(self, key: str, state: HookState) -> None:
        self._db.execute(
            "INSERT INTO loopguard_hook_state VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE "
            "SET state = excluded.state, updated = excluded.updated",
            (key, state.to_json(), time.time()),
        )

    def forget(self, key: str) -> None:
        """The session ended: its bookkeeping goes (its log stays until it expires)."""
        self._db.execute("DELETE FROM loopguard_hook_state WHERE key = ?", (key,))

    def log(self, key: str, row: LogRow) -> None:
        with self._db:  # one transaction: the insert and the trim
            self._db.execute("BEGIN IMMEDIATE")
            cursor = self._db.execute(
                "INSERT INTO loopguard_hook_log (key, ts, dialect, event, tool, call_id, action, "
                "detector, message) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    row.ts,
                    row.dialect,
                    row.event,
                    row.tool,
                    row.call_id,
                    row.action,
                    row.detector,
                    row.message,
                ),
            )
            self._db.execute(
                "DELETE FROM loopguard_hook_log WHERE key = ? AND id <= ?",
                (key, (cursor.lastrowid or 0) - LOG_KEPT),
            )

    def rows(self, key: str, limit: int = LOG_KEPT) -> list[LogRow]:
        """The session's last `limit` decisions, oldest first."""
        found = self._db.execute(
            "SELECT ts, dialect, event, tool, call_id, action, detector, message FROM "
            "loopguard_hook_log WHERE key = ? ORDER BY id DESC LIMIT ?",
            (key, limit),
        ).fetchall()
        return [LogRow(*row) for row in reversed(found)]

    def sessions(self, limit: int = 20) -> list[tuple[str, float, int]]:
        """(key, last event time, events logged) of the sessions seen last, newest first."""
        return [
            (str(k), float(t), int(n))
            for k, t, n in self._db.execute(
                "SELECT key, max(ts), count(*) FROM loopguard_hook_log GROUP BY key "
                "ORDER BY max(ts) DESC LIMIT ?",
                (limit,),
            ).fetchall()
        ]

    def maybe_purge(self, now: float) -> None:
        """Now and then, drop what sessions idle for `TTL_S` left behind."""
        if random.randrange(_PURGE_ONE_IN):
            return
        self._db.execute("DELETE FROM loopguard_hook_state WHERE updated < ?", (now - TTL_S,))
        self._db.execute(
            "DELETE FROM loopguard_hook_log WHERE key IN (SELECT key FROM loopguard_hook_log "
            "GROUP BY key HAVING max(ts) < ?)",
            (now - TTL_S,),
        )


@contextlib.contextmanager
def lock(folder: Path, key: str) -> Iterator[bool]:
    """Hold the session's lock (True), or go on without it after `LOCK_WAIT_S` (False).

    POSIX `flock`; where there is none (Windows) events run unlocked, which the store's
    compare-and-set keeps correct except for the grouping of calls into rounds.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield False
        return
    stripe = int(hashlib.blake2b(key.encode("utf-8", "replace"), digest_size=4).hexdigest(), 16)
    path = folder / "locks" / f"{stripe % STRIPES:02d}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        held = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.002)
        yield held
    finally:
        os.close(fd)  # closing releases the lock


def call_key(call_id: str | None, tool: str, args: Any) -> str:
    """How a call is known between its pre and post events: its id, else tool and arguments."""
    if call_id:
        return call_id
    try:
        text = json.dumps(args, sort_keys=True, default=str, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(type(args))
    digest = hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=12).hexdigest()
    return f"{tool}:{digest}"
