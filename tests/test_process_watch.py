"""process_watch: a test that starts a process must be marked slow, so `-m "not slow"` stays fast.

The inner sessions raise the audit event `subprocess.Popen` with `sys.audit` instead of
starting a real process (that would make these tests slow themselves), and each test gives
the watch a fresh list of open watches so that its own, opened around it by the outer
session, does not see those events.
"""

from __future__ import annotations

import sys

import process_watch
import pytest

INNER = """
import sys

import pytest


def start():
    sys.audit("subprocess.Popen", None, ["tool", "--flag"], None, None)


def test_unmarked_start():
    start()


@pytest.mark.slow
def test_marked_start():
    start()


def test_no_process():
    assert True


@pytest.fixture
def starts_in_setup():
    start()


def test_a_fixture_starts_one(starts_in_setup):
    pass
"""


@pytest.fixture
def own_watches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process_watch, "_open", [])


def test_a_watch_collects_process_starts_only_while_open(own_watches: None) -> None:
    started = process_watch.watch()
    sys.audit("subprocess.Popen", None, ["tool", "--flag"], None, None)
    sys.audit("os.system", b"echo hi")
    sys.audit("open", "file.txt", "r", 0)  # not a process
    assert process_watch.unwatch(started) == [
        "subprocess.Popen ['tool', '--flag']",
        "os.system b'echo hi'",
    ]
    sys.audit("os.posix_spawn", "/bin/true", ["true"], {})
    assert started == ["subprocess.Popen ['tool', '--flag']", "os.system b'echo hi'"]


def test_an_unmarked_test_that_starts_a_process_fails_with_the_fix(
    own_watches: None, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # no third-party plugins: faster
    pytester.makeini("[pytest]\nmarkers =\n    slow: starts a process\n")
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_inprocess("-p", "process_watch", "-p", "no:cacheprovider", "-rE")
    result.assert_outcomes(passed=4, errors=2)
    out = result.stdout.str()
    assert (
        "test_inner.py::test_unmarked_start started a process (subprocess.Popen ['tool', "
        "'--flag']) without @pytest.mark.slow: mark the test, or its module, slow"
    ) in out
    assert "ERROR at teardown of test_a_fixture_starts_one" in out
    assert "test_marked_start started" not in out and "test_no_process started" not in out
