"""Fingerprinting is bounded (issue 22, item 4): the Python walks of an argument or result
visit at most WALK_MAX values and 200 levels, so an object whose attributes reach a module or
`sys`, or a list of millions of items, costs a bounded time; plain JSON data is still encoded
whole, and values under the budget keep the text they always had (stored digests stay valid).
"""

from __future__ import annotations

import collections
import logging
import subprocess
import sys
import time
from typing import Any

import pytest

import loopguard
from loopguard.state.fingerprint import WALK_MAX, canonical_text, result_text


class Response:
    """What an HTTP or ORM client hands back: data, and a reference to its library."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.lib = collections


class Client:
    def __init__(self) -> None:
        self.name = "c"
        self.log = logging.getLogger("loopguard.test.client")  # reaches every logger
        self.sys = sys


def test_a_module_is_fingerprinted_by_its_name() -> None:
    text = canonical_text(Response())
    assert text == (
        '{"$type": "test_hardening_fingerprint.Response", "$value": {"lib": '
        '{"$type": "builtins.module", "$value": "collections"}, "status": 200}}'
    )
    assert canonical_text(Response(500)) != text
    assert canonical_text(sys) == '{"$type": "builtins.module", "$value": "sys"}'


def test_an_object_graph_is_walked_within_the_budget() -> None:
    start = time.monotonic()
    first, second = canonical_text(Client()), canonical_text(Client())
    assert time.monotonic() - start < 5
    assert first == second  # stable: the same object graph, the same text


def test_past_the_budget_items_are_counted_not_walked() -> None:
    items: list[Any] = [{i} for i in range(WALK_MAX)]  # sets: the careful walk
    text = canonical_text(items)
    assert text.endswith(f', {{"$more": {WALK_MAX - WALK_MAX // 2}}}]'), text[-80:]
    mapping = {(i,): i for i in range(WALK_MAX)}  # tuple keys: the careful walk
    assert '"$more": ' in canonical_text(mapping)
    assert canonical_text([set(range(WALK_MAX + 1))]) == f'[{{"$set": {WALK_MAX + 1}}}]'
    small = [{1, 2}, (3, 4), b"x"]
    assert canonical_text(small) == '[[1, 2], [3, 4], {"$bytes": "eA=="}]'  # unchanged


def test_huge_lists_cost_seconds_not_minutes() -> None:
    session = loopguard.Guard.from_yaml("version: 1\n").session("s")
    big = [[]] * 2_000_000
    start = time.monotonic()
    session.before_call("fetch", {"url": "u"})
    session.after_call("fetch", {"url": "u"}, big)
    session.before_call("fetch", big)
    assert time.monotonic() - start < 4  # was ~8 s (1,000,000 took 4.2 s), 10,000,000 >30 s
    text = result_text({"id": 1, "rows": big}, frozenset({"id"}), None)
    assert text.startswith('{"rows": [[], []')  # top-level volatile field still dropped


def test_a_big_array_counts_every_element_through_its_bytes() -> None:
    np = pytest.importorskip("numpy")
    small = np.arange(3)
    assert canonical_text(small) == '{"$type": "numpy.ndarray", "$value": [0, 1, 2]}'
    big = np.zeros((400, 400))
    other = big.copy()
    other[399, 399] = 1.0
    start = time.monotonic()
    text = canonical_text(big)
    assert time.monotonic() - start < 2
    assert '"shape": [400, 400]' in text and '"dtype": "float64"' in text
    assert text == canonical_text(big.copy()) and text != canonical_text(other)
    objects = np.array([object()] * (WALK_MAX + 5), dtype=object)  # bytes would be addresses
    assert canonical_text(objects).endswith('{"$more": 7}]}')  # the array, its list, the rest


@pytest.mark.slow  # the old code never returned: a child process with a timeout
@pytest.mark.parametrize(
    "call",
    [
        "s.after_call('fetch', {'url': 'u'}, Response())",
        "s.before_call('fetch', sys)",
        "s.after_call('fetch', sys, sys)",
    ],
)
def test_a_result_reaching_a_module_does_not_hang_the_call(call: str) -> None:
    code = (
        "import collections, sys, loopguard\n"
        "class Response:\n"
        "    def __init__(self):\n"
        "        self.status = 200\n"
        "        self.lib = collections\n"
        "s = loopguard.Guard.from_yaml('version: 1\\n').session('a')\n"
        "s.before_call('fetch', {'url': 'u'})\n"
        f"print({call}.action)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "allow"
