"""A pytest plugin: with `-m "not slow"`, a module marked slow as a whole is not even imported.

Deselection by marker happens after collection, so a module's imports are paid even when
none of its tests run; for the agent-framework modules that is seconds. A module declares
itself slow with a top-level `pytestmark = pytest.mark.slow` line, read here from its text
(no import). Only the exact inner-loop expression `not slow` skips modules this way; any
other `-m` expression collects everything and lets pytest deselect. Skipped modules are
not counted as "deselected" in pytest's summary.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

INNER_LOOP = "not slow"
_DECLARES_SLOW = re.compile(rb"^pytestmark = pytest\.mark\.slow\b", re.MULTILINE)


def declares_slow(path: Path) -> bool:
    """Whether the module's text marks every test in it slow."""
    try:
        return _DECLARES_SLOW.search(path.read_bytes()) is not None
    except OSError:
        return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave a whole-slow test module out when the mark expression is exactly `not slow`."""
    expression = " ".join((config.getoption("markexpr") or "").split())
    if (expression == INNER_LOOP and collection_path.suffix == ".py"
            and collection_path.name.startswith("test_") and declares_slow(collection_path)):
        return True
    return None
