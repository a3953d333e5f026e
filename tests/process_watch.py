"""A pytest plugin that fails a test which starts a process without `@pytest.mark.slow`.

Starting a process is what makes a test slow here (a fresh interpreter imports loopguard
again, a few tenths of a second each), so this keeps `python -m pytest -m "not slow"` a fast
inner loop as tests are added. Processes are seen through Python's audit events (PEP 578):
`subprocess`, `os.system`, `os.posix_spawn`, the `os.spawn*`/`os.exec*` families and
`os.fork` (multiprocessing's default start method on Linux) all raise one of these events.
An audit hook cannot be removed, so one hook is installed on import and reports into
whichever watches are open; one is open around each test, its fixtures included.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

EVENTS = frozenset(
    {
        "subprocess.Popen",
        "os.system",
        "os.posix_spawn",
        "os.spawn",
        "os.exec",
        "os.fork",
        "os.forkpty",
    }
)
_open: list[list[str]] = []


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event in EVENTS and _open:
        for started in _open:
            started.append(f"{event} {_program(args)}".rstrip())


def _program(args: tuple[Any, ...]) -> str:
    """The program or command line an event names, shortened for a message ('' if none)."""
    named = next((a for a in args if isinstance(a, (str, bytes, os.PathLike, list, tuple))), None)
    return "" if named is None else repr(named)[:120]


sys.addaudithook(_hook)


def watch() -> list[str]:
    """Start collecting: the list gets one line per process started ('event program')."""
    started: list[str] = []
    _open.append(started)
    return started


def unwatch(started: list[str]) -> list[str]:
    """Stop collecting into `started` (from `watch`) and return it."""
    _open.remove(started)
    return started


_STARTED = pytest.StashKey[list[str]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """Watch for processes from before the first fixture of a test is set up."""
    item.stash[_STARTED] = watch()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """After the last fixture is torn down: fail if a process started and the test is not slow."""
    try:
        result = yield
    finally:
        started = unwatch(item.stash[_STARTED]) if _STARTED in item.stash else []
    if started and item.get_closest_marker("slow") is None:
        more = f" and {len(started) - 1} more" if len(started) > 1 else ""
        pytest.fail(
            f"{item.nodeid} started a process ({started[0]}{more}) without "
            "@pytest.mark.slow: mark the test, or its module, slow so that "
            '`python -m pytest -m "not slow"` stays fast',
            pytrace=False,
        )
    return result
