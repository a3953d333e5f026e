"""A pytest plugin that fails a test which leaves an asyncio event loop open.

An event loop nobody closes holds a socket pair (its self-pipe); when the garbage collector
frees it, Python warns (`ResourceWarning: unclosed event loop`, `unclosed <socket ...>`), and
under `filterwarnings = error` the warning fails whichever test happens to be running then
— a failure that moves with the order of the tests. Some frameworks' `run_sync` leave their
loop open on purpose (pydantic-graph keeps one per thread). So every loop made during a test
is remembered (weakly), and after the test's last fixture is torn down one that is neither
closed nor running fails that test, named with where it was made; it is closed then, so it
cannot fail a later test too.
"""

from __future__ import annotations

import asyncio
import os
import traceback
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

_made: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, str] = weakref.WeakKeyDictionary()
_init = asyncio.BaseEventLoop.__init__
_ASYNCIO = os.path.dirname(asyncio.__file__)  # its frames say nothing of who made the loop


def _remembering_init(self: asyncio.BaseEventLoop, *args: Any, **kwargs: Any) -> None:
    _init(self, *args, **kwargs)
    frames = [f for f in traceback.extract_stack(limit=16)[:-1] if _ASYNCIO not in f.filename]
    _made[self] = "".join(traceback.format_list(frames[-4:])).rstrip()


asyncio.BaseEventLoop.__init__ = _remembering_init  # type: ignore[method-assign]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """Loops that exist before a test (a session fixture's) are not the test's."""
    _made.clear()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """After the last fixture is torn down: fail if a loop made meanwhile is still open."""
    result = yield
    left = [(loop, where) for loop, where in list(_made.items()) if _left_open(loop)]
    _made.clear()
    for loop, _ in left:
        loop.close()
    if left:
        pytest.fail(
            f"{item.nodeid} left {len(left)} asyncio event loop(s) open; the first was made "
            f"at\n{left[0][1]}\nclose it (asyncio.run closes its own; a framework's run_sync "
            "may not: run it in a loop the test closes)",
            pytrace=False,
        )
    return result


def _left_open(loop: asyncio.AbstractEventLoop) -> bool:
    return not loop.is_closed() and not loop.is_running()
