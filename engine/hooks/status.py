"""`loopguard hook status [SESSION]`: what the hook saw and decided, read from hooks.db.

Without a session: the sessions seen last, with their last stop. With one (a session id,
or the start of one): its last decisions, each with the event, tool, decision, detector
and the guard's message, so a user can tell why a call was denied. Text or `--format json`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from loopguard.hooks import paths
from loopguard.hooks.journal import LOG_KEPT, Journal, LogRow

STOPS = ("critical", "breaker", "closed", "ran:breaker", "failed:breaker")


def add_status_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "session", nargs="?", help="a session id, or its first characters (default: list them)"
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--limit", type=int, default=30, help=f"decisions shown (default 30, at most {LOG_KEPT})"
    )
    parser.set_defaults(run=run_status)


def run_status(args: argparse.Namespace) -> int:
    """0: shown; 1: no such session; 2: the state file cannot be read."""
    database = paths.database()
    if not database.exists():
        print(f"loopguard: no hook has run yet (no {database})", file=sys.stderr)
        return 1 if args.session else 0
    try:
        book = Journal(database)
    except Exception as exc:  # noqa: BLE001 - a damaged or locked file: say so, no traceback
        print(f"loopguard: cannot read {database}: {exc}", file=sys.stderr)
        return 2
    try:
        return _show(book, args)
    except Exception as exc:  # noqa: BLE001
        print(f"loopguard: cannot read {database}: {exc}", file=sys.stderr)
        return 2
    finally:
        book.close()


def _show(book: Journal, args: argparse.Namespace) -> int:
    sessions = book.sessions(limit=1000)
    if not args.session:
        listed = [_summary(book, key, last, count) for key, last, count in sessions[:20]]
        if args.format == "json":
            print(json.dumps({"sessions": listed}, ensure_ascii=False, indent=2))
        else:
            _print_sessions(listed)
        return 0
    matches = [key for key, _, _ in sessions if key == args.session]
    matches = matches or [key for key, _, _ in sessions if key.startswith(args.session)]
    if len(matches) != 1:
        why = "no session" if not matches else f"{len(matches)} sessions"
        print(f"loopguard: {why} matching {args.session!r} in {book.path}", file=sys.stderr)
        for key in matches[:10]:
            print(f"  {_clean(key)}", file=sys.stderr)
        return 1
    key = matches[0]
    rows = book.rows(key, max(1, min(args.limit, LOG_KEPT)))
    if args.format == "json":
        document = {"session": key, "decisions": [_row_dict(row) for row in rows]}
        print(json.dumps(document, ensure_ascii=False, indent=2))
    else:
        _print_rows(key, rows)
    return 0


def _summary(book: Journal, key: str, last: float, count: int) -> dict[str, Any]:
    stops = [row for row in book.rows(key) if row.action in STOPS]
    return {
        "session": key,
        "last_event": _iso(last),
        "events": count,
        "stops": len(stops),
        "last_stop": _row_dict(stops[-1]) if stops else None,
    }


def _row_dict(row: LogRow) -> dict[str, Any]:
    return {
        "time": _iso(row.ts),
        "dialect": row.dialect,
        "event": row.event,
        "tool": row.tool,
        "call_id": row.call_id,
        "decision": row.action,
        "detector": row.detector,
        "message": row.message,
    }


def _print_sessions(listed: list[dict[str, Any]]) -> None:
    if not listed:
        print("no hook sessions recorded")
        return
    for item in listed:
        stop = item["last_stop"]
        tail = (
            f"; last stop: {_clean(stop['tool'])} {stop['decision']} ({stop['detector'] or '-'})"
            if stop
            else ""
        )
        print(
            f"{_clean(item['session'])}  {item['last_event']}  {item['events']} events, "
            f"{item['stops']} stops{tail}"
        )


def _print_rows(key: str, rows: list[LogRow]) -> None:
    print(f"session {_clean(key)}: the last {len(rows)} decisions")
    for row in rows:
        when = time.strftime("%H:%M:%S", time.localtime(row.ts))
        what = f"{when}  {_clean(row.event):<18} {_clean(row.tool):<16} {row.action:<15}"
        if row.detector:
            what += f" {_clean(row.detector)}"
        print(what.rstrip())
        if row.message and row.action != "allow":
            print(f"    {_clean(row.message)}")


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(ts))


def _clean(text: Any) -> str:
    """Text for a terminal: control characters (escape sequences, NUL) shown escaped."""
    value = str(text if text is not None else "")
    if value.isprintable():
        return value
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in value)
