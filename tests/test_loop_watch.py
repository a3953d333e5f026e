"""loop_watch: a test that leaves an event loop open fails itself, not a later test."""

from __future__ import annotations

import pytest

INNER = """
import asyncio

import pytest


def test_leaves_a_loop_open():
    asyncio.new_event_loop()


def test_closes_its_loop():
    loop = asyncio.new_event_loop()
    loop.close()


def test_asyncio_run_closes_its_own():
    async def nothing():
        return 1

    assert asyncio.run(nothing()) == 1


@pytest.fixture
def open_loop():
    yield asyncio.new_event_loop()


def test_a_fixture_leaves_one(open_loop):
    pass


def test_the_leaked_loop_was_closed_for_the_next_test():
    import gc
    gc.collect()  # an unclosed loop collected here would warn (an error under -W error)
"""


def test_a_test_that_leaves_a_loop_open_fails_with_where_it_was_made(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # no third-party plugins: faster
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_inprocess(
        "-p", "loop_watch", "-p", "no:cacheprovider", "-rE", "-W", "error", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=5, errors=2)
    out = result.stdout.str()
    assert "test_inner.py::test_leaves_a_loop_open left 1 asyncio event loop(s) open" in out
    assert 'test_inner.py", line 7, in test_leaves_a_loop_open' in out
    assert "ERROR at teardown of test_a_fixture_leaves_one" in out
    assert "test_closes_its_loop left" not in out and "asyncio_run_closes_its_own left" not in out
