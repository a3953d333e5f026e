"""`SqliteStore`: session state in one SQLite file, shared by the processes of one machine.

Standard library only. WAL mode, so readers never wait for the writer and a commit costs no
fsync (`synchronous=NORMAL`: a crash of the process loses nothing, a power cut at most the
last commits). Each write is one compare-and-set statement (see `versioned`); SQLite's own
file lock serialises writers of several processes, and `busy_timeout_s` bounds the wait for
it. Sessions idle for `ttl_s` (None: never) are treated as absent and purged now and then.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
import weakref
from typing import Any

from loopguard.stores.codec import MAX_STATE_BYTES, StateCodecError
from loopguard.stores.versioned import StoreUnavailable, VersionedStore, check_token

_TABLE = "loopguard_sessions"
_PURGE_EVERY = 1000  # writes between purges of expired sessions
_CHECK_FILE_S = 0.25  # how often the database file is checked to be the one opened
log = logging.getLogger("loopguard")


def _close(conn: sqlite3.Connection, pid: int) -> None:
    """Close a backend's connection when the backend goes away (Python 3.13 warns about an
    unclosed one); only in the process that opened it, never a forked child's inherited copy."""
    if os.getpid() == pid:
        conn.close()


class SqliteBackend:
    """Blobs in a table (key, token, state, expires) of one SQLite file."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        ttl_s: float | None = 6 * 3600.0,
        busy_timeout_s: float = 5.0,
    ) -> None:
        self.path = os.fspath(path)
        self.ttl_s = ttl_s
        self.busy_timeout_s = busy_timeout_s
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        self._writes = 0
        self._file: tuple[int, int] | None = None  # (device, inode) of the file opened
        self._check_at = 0.0

    def _identity(self) -> tuple[int, int] | None:
        try:
            found = os.stat(self.path)
        except (OSError, ValueError):
            return None
        return found.st_dev, found.st_ino

    def _replaced(self) -> bool:
        """True when the file at `path` is no longer the one opened (deleted, or another file
        put there): writes would go to a file nobody else can open (checked every 0.25 s)."""
        now = time.monotonic()
        if self._file is None or now < self._check_at:
            return False
        self._check_at = now + _CHECK_FILE_S
        if self._identity() == self._file:
            return False
        log.warning(
            "loopguard SQLite store %s: the database file was deleted or replaced while in "
            "use; it is opened again, and each session this process holds is written there "
            "again from its copy (sessions only other processes held start afresh)",
            self.path,
        )
        return True

    def _db(self) -> sqlite3.Connection:
        """The connection of this process (a forked child opens its own); opened again when
        the file was deleted or replaced under it."""
        if self._conn is not None and self._pid == os.getpid() and self._replaced():
            self._conn.close()
            self._conn = None
        if self._conn is None or self._pid != os.getpid():
            conn = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout_s,
                isolation_level=None,
                check_same_thread=False,
            )
            try:
                self._set_up(conn)
            except BaseException:  # a damaged file: the caller reports it, nothing stays open
                conn.close()
                raise
            self._conn, self._pid = conn, os.getpid()
            self._file = self._identity()
            self._check_at = time.monotonic() + _CHECK_FILE_S
            weakref.finalize(self, _close, conn, self._pid)
        return self._conn

    def _set_up(self, conn: sqlite3.Connection) -> None:
        """WAL mode and the table. While other connections open the same new file (workers
        starting together), switching the journal mode can fail with "database is locked"
        before the busy timeout is up: it is retried until the timeout has passed."""
        give_up = time.monotonic() + self.busy_timeout_s
        while True:
            try:
                if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    conn.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError:
                if time.monotonic() >= give_up:
                    raise
                time.sleep(0.01)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {_TABLE} (key TEXT PRIMARY KEY, "
            "token INTEGER NOT NULL, state BLOB NOT NULL, expires REAL) WITHOUT ROWID"
        )

    def _expires(self, now: float) -> float | None:
        return None if self.ttl_s is None else now + self.ttl_s

    def _run(self, sql: str, args: tuple[Any, ...]) -> sqlite3.Cursor:
        try:
            with self._lock:
                return self._db().execute(sql, args)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"SQLite {self.path}: {exc}") from None

    def load(self, key: str) -> tuple[int, bytes] | None:
        """(token, blob), None when absent; a row of the wrong types or a blob over
        MAX_STATE_BYTES (the state column is sized before it is read) is StateCodecError."""
        row = self._run(
            f"SELECT token, typeof(state), length(state), CASE WHEN typeof(state) = 'blob' "
            f"AND length(state) <= ? THEN state END FROM {_TABLE} WHERE key = ? AND "
            "(expires IS NULL OR expires >= ?)",
            (MAX_STATE_BYTES, key, time.time()),
        ).fetchone()
        if row is None:
            return None
        token, kind, size, blob = row
        if kind != "blob":
            raise StateCodecError(f"stored state is of SQLite type {kind}, not a blob")
        if blob is None:
            raise StateCodecError(
                f"stored state is {size >> 20} MiB, over the limit of {MAX_STATE_BYTES >> 20} MiB"
            )
        return check_token(token), bytes(blob)

    def cas(self, key: str, expected: int, token: int, blob: bytes) -> tuple[int, bytes] | None:
        now = time.time()
        if expected:
            cur = self._run(
                f"UPDATE {_TABLE} SET token = ?, state = ?, expires = ? WHERE key = ? "
                "AND token = ? AND (expires IS NULL OR expires >= ?)",
                (token, blob, self._expires(now), key, expected, now),
            )
        else:  # new, or replacing one that expired
            cur = self._run(
                f"INSERT INTO {_TABLE} VALUES (?, ?, ?, ?) ON CONFLICT(key) DO UPDATE "
                "SET token = excluded.token, state = excluded.state, expires = "
                f"excluded.expires WHERE {_TABLE}.expires < ?",
                (key, token, blob, self._expires(now), now),
            )
        if cur.rowcount == 1:
            self._writes += 1
            if self.ttl_s is not None and self._writes % _PURGE_EVERY == 0:
                self._run(f"DELETE FROM {_TABLE} WHERE expires < ?", (now,))
            return None
        return self.load(key) or (0, b"")

    def delete(self, key: str) -> None:
        self._run(f"DELETE FROM {_TABLE} WHERE key = ?", (key,))

    def count(self) -> int:
        return int(
            self._run(
                f"SELECT count(*) FROM {_TABLE} WHERE expires IS NULL OR expires >= ?",
                (time.time(),),
            ).fetchone()[0]
        )


class SqliteStore(VersionedStore):
    """`SqliteStore("state.db")`: sessions that survive restarts, shared by local processes."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        ttl_s: float | None = 6 * 3600.0,
        fail_mode: str | None = None,
        cache_size: int = 10_000,
        busy_timeout_s: float = 5.0,
        retry_s: float = 1.0,
    ) -> None:
        super().__init__(
            SqliteBackend(path, ttl_s, busy_timeout_s),
            fail_mode=fail_mode,
            cache_size=cache_size,
            retry_s=retry_s,
            name=f"SQLite store {os.fspath(path)}",
        )
