"""Suite-wide pytest setup: the Hypothesis profiles and the shared fixtures.

Only fixtures and hooks belong here; functions and constants that tests import live in
helpers.py (and the fakes in fakes.py, plugin_fakes.py, store_checks.py, store_servers.py).
"""

from __future__ import annotations

import os
import time

import pytest
from helpers import Clock
from hypothesis import HealthCheck, settings
from plugin_fakes import site  # noqa: F401 — fake installed plugins, undone after each test
from store_servers import redis_url  # noqa: F401 — the session-scoped server fixture

# process_watch fails a test that starts a process without @pytest.mark.slow; slow_modules
# leaves whole-slow modules unimported under -m "not slow"; loop_watch fails a test that leaves
# an event loop open (collected later, it would fail another test); pytester runs the small inner
# sessions that test both.
pytest_plugins = ("process_watch", "loop_watch", "slow_modules", "pytester")

# Hypothesis profiles, one mechanism for the whole suite: "ci" (the default) is short and
# fixed-seed, so a run is reproducible; "long" is the documented longer search
# (HYPOTHESIS_PROFILE=long python -m pytest -q tests/test_hardening_props.py). Tests that
# set max_examples themselves keep it under both.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile(
    "long",
    max_examples=5_000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Hook servers that the suite's hook processes start (loopguard.hooks.server) exit after 20 s
# without a request instead of 10 minutes.
os.environ.setdefault("LOOPGUARD_HOOK_SERVER_IDLE", "20")


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """`time.monotonic` replaced by a Clock that moves only when a test moves it."""
    fake = Clock()
    monkeypatch.setattr(time, "monotonic", fake)
    return fake
