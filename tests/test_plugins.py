"""Third-party detector plugins: discovery, isolation of faults, the env switches,
and the example plugin `loopguard-error-cascade` voting through `Guard.from_dict`.

Plugins are "installed" as fake `*.dist-info` folders in `tmp_path` (see
`plugin_fakes`); the cached registry is restored after every test.
"""

from __future__ import annotations

from typing import Any

import pytest
from plugin_fakes import BUILTINS, EXAMPLE_SOURCE, FakeSite, detector_module, ids

import loopguard

RULES: dict[str, Any] = {"version": 1, "extends": ["builtin:default"]}


def guard(site: FakeSite, **detectors: Any) -> loopguard.Guard:
    site.registry()
    return loopguard.Guard.from_dict({**RULES, "detectors": detectors})


def fail(
    session: loopguard.Session, tool: str, args: Any, run_id: str | None = None
) -> loopguard.Decision:
    """One call that runs and fails; returns the decision made before it ran."""
    decision = session.before_call(tool, args, run_id=run_id)
    session.after_call(tool, args, error="HTTP 500: upstream unavailable", run_id=run_id)
    return decision


def cascade_votes(decision: loopguard.Decision) -> list[loopguard.Vote]:
    return [vote for vote in decision.votes if vote.detector == "error_cascade"]


# -- discovery -------------------------------------------------------------------


def test_example_plugin_is_discovered_after_the_builtins(site: FakeSite) -> None:
    site.add_example()
    registry = site.registry()
    assert ids(registry) == (*BUILTINS, "error_cascade")
    entry = registry.get("error_cascade")
    assert entry is not None
    assert (entry.source, entry.builtin, entry.detector.levels) == (
        EXAMPLE_SOURCE,
        False,
        ("warn", "critical"),
    )
    assert registry.faults == ()


def test_without_plugins_only_the_builtins_are_registered(site: FakeSite) -> None:
    registry = site.registry()
    assert ids(registry) == BUILTINS
    assert all(entry.builtin for entry in registry.entries)


def test_discovery_order_is_sorted_by_distribution_then_entry(site: FakeSite) -> None:
    site.add_dist(
        "lgfake-zeta",
        {"zb": "lgfake_zb", "za": "lgfake_za"},
        {"lgfake_zb": detector_module("", "zeta_b"), "lgfake_za": detector_module("", "zeta_a")},
    )
    site.add_dist(
        "lgfake-alpha", {"only": "lgfake_alpha"}, {"lgfake_alpha": detector_module("", "alpha")}
    )
    first = ids(site.registry())
    assert first == (*BUILTINS, "alpha", "zeta_a", "zeta_b")
    assert ids(site.registry()) == first


def test_disable_autoload_loads_only_the_builtins(
    site: FakeSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.add_example()
    site.add_dist("lgfake-broken", {"broken": "lgfake_missing_module"})
    monkeypatch.setenv("LOOPGUARD_DISABLE_PLUGIN_AUTOLOAD", "1")
    registry = site.registry()
    assert ids(registry) == BUILTINS
    assert registry.faults == ()


@pytest.mark.parametrize(
    "blocked",
    [
        "error_cascade",
        EXAMPLE_SOURCE,
        "something_else, error_cascade ",
    ],
)
def test_blocked_plugin_is_left_out(
    site: FakeSite, monkeypatch: pytest.MonkeyPatch, blocked: str
) -> None:
    site.add_example()
    monkeypatch.setenv("LOOPGUARD_BLOCK_PLUGINS", blocked)
    registry = site.registry()
    assert ids(registry) == BUILTINS
    assert registry.faults == ()


# -- faults at load time ----------------------------------------------------------

BROKEN_PLUGINS = {
    "import": (
        "import",
        {"lgfake_bad": "import lgfake_no_such_dependency\n"},
        "No module named 'lgfake_no_such_dependency'",
    ),
    "missing-module": ("import", {}, "No module named 'lgfake_bad'"),
    "register-raises": (
        "register",
        {
            "lgfake_bad": """
        import loopguard

        @loopguard.hookimpl
        def loopguard_register_detectors():
            raise RuntimeError("no detectors today")
        """
        },
        "RuntimeError: no detectors today",
    ),
    "misspelt-hook": (
        "register",
        {
            "lgfake_bad": """
        import loopguard

        @loopguard.hookimpl
        def loopguard_register_detector():
            return []
        """
        },
        "unknown hook 'loopguard_register_detector'",
    ),
    "invalid-schema": (
        "schema",
        {
            "lgfake_bad": detector_module(
                "options_schema = "
                "{'type': 'object', 'properties': {'n': {'type': 'whole number'}}}",
                "bad_schema",
            )
        },
        "invalid options schema",
    ),
    "duplicate-id": (
        "register",
        {"lgfake_bad": detector_module("", "doom_loop_exact")},
        "'doom_loop_exact' is already registered",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN_PLUGINS))
def test_broken_plugin_is_named_and_isolated(site: FakeSite, case: str) -> None:
    stage, modules, message = BROKEN_PLUGINS[case]
    site.add_example()
    site.add_dist("lgfake-bad", {"bad": "lgfake_bad"}, modules)
    registry = site.registry()
    assert ids(registry) == (*BUILTINS, "error_cascade")
    assert [(f.source, f.stage) for f in registry.faults] == [("lgfake-bad[bad]", stage)]
    assert message in registry.faults[0].message
    assert str(registry.faults[0]).startswith(f"lgfake-bad[bad]: {stage} failed: ")


# -- the example plugin's votes ---------------------------------------------------


def test_failures_with_different_arguments_warn_on_the_next_call(site: FakeSite) -> None:
    site.add_example()
    session = guard(site).session("s1")
    session.begin_turn([{"role": "user", "content": "fetch the page"}])
    for url in "abc":
        assert fail(session, "fetch", {"url": url}).action == "allow"
    assert cascade_votes(fail(session, "fetch", {"url": "d"})) == []  # three failures so far
    decision = session.before_call("fetch", {"url": "e"})
    assert decision.action == "warn"
    assert decision.detector == "error_cascade" and decision.notify
    (vote,) = cascade_votes(decision)
    assert (vote.level, vote.count, vote.evidence) == ("warn", 4, (1, 2, 3, 4))
    assert vote.message == "fetch failed 4 times in a row with 4 different arguments."
    assert decision.message is not None and vote.message in decision.message


def test_identical_arguments_are_left_to_other_detectors(site: FakeSite) -> None:
    site.add_example()
    session = guard(site, doom_loop_exact={"enabled": False}).session("s1")
    for _ in range(5):
        assert cascade_votes(fail(session, "fetch", {"url": "a"})) == []


def test_two_different_arguments_are_enough(site: FakeSite) -> None:
    site.add_example()
    session = guard(site, doom_loop_exact={"enabled": False}).session("s1")
    for url in "aaab":
        fail(session, "fetch", {"url": url})
    assert cascade_votes(session.before_call("fetch", {"url": "c"}))[0].count == 4


@pytest.mark.parametrize("interruption", ["success", "other_tool", "pending"])
def test_the_streak_restarts_after_an_interruption(site: FakeSite, interruption: str) -> None:
    site.add_example()
    session = guard(site).session("s1")
    for url in "abc":
        fail(session, "fetch", {"url": url})
    if interruption == "success":
        session.before_call("fetch", {"url": "ok"})
        session.after_call("fetch", {"url": "ok"}, result={"status": 200})
    elif interruption == "other_tool":
        fail(session, "search", {"q": "mirror"})
    else:
        session.before_call("fetch", {"url": "never answered"})
    fail(session, "fetch", {"url": "d"})
    assert cascade_votes(session.before_call("fetch", {"url": "e"})) == []


def test_another_run_does_not_see_the_streak(site: FakeSite) -> None:
    site.add_example()
    session = guard(site).session("s1")
    for url in "abcd":
        fail(session, "fetch", {"url": url}, run_id="run-1")
    assert cascade_votes(session.before_call("fetch", {"url": "e"}, run_id="run-2")) == []
    assert cascade_votes(session.before_call("fetch", {"url": "e"}, run_id="run-1")) != []


def test_options_from_the_rules_change_threshold_and_level(site: FakeSite) -> None:
    site.add_example()
    session = guard(site, error_cascade={"threshold": 2, "level": "critical"}).session("s1")
    fail(session, "fetch", {"url": "a"})
    fail(session, "fetch", {"url": "b"})
    decision = session.before_call("fetch", {"url": "c"})
    assert (decision.action, decision.detector, decision.blocked) == (
        "critical",
        "error_cascade",
        True,
    )


def test_its_switch_turns_it_off(site: FakeSite) -> None:
    site.add_example()
    session = guard(site, error_cascade={"enabled": False}).session("s1")
    for url in "abcd":
        fail(session, "fetch", {"url": url})
    assert session.before_call("fetch", {"url": "e"}).action == "allow"


# -- faults at call time ----------------------------------------------------------

EXPLODING = {
    "lgfake_explode": detector_module(
        "def check(self, call, state, cfg):\n    raise RuntimeError('kaput')", "explode"
    )
}


def test_a_detector_raising_in_check_is_isolated_and_recorded(site: FakeSite) -> None:
    site.add_example()
    site.add_dist("lgfake-explode", {"explode": "lgfake_explode"}, EXPLODING)
    session = guard(site).session("s1")
    for url in "abcd":
        assert fail(session, "fetch", {"url": url}).faults == (
            "lgfake-explode[explode]: RuntimeError: kaput",
        )
    decision = session.before_call("fetch", {"url": "e"})
    assert (decision.action, decision.detector) == ("warn", "error_cascade")
    assert decision.faults == ("lgfake-explode[explode]: RuntimeError: kaput",)
    for i in range(2):  # the built-in doom-loop detector still works beside it
        session.before_call("read", {"path": "x"}, call_id=f"r{i}")
        session.after_call("read", {"path": "x"}, result="same", call_id=f"r{i}")
    assert session.before_call("read", {"path": "x"}).action == "critical"


def test_fail_mode_closed_turns_a_raising_detector_into_critical(site: FakeSite) -> None:
    site.add_dist("lgfake-explode", {"explode": "lgfake_explode"}, EXPLODING)
    site.registry()
    rules = {**RULES, "aggregator": {"fail_mode": "closed", "escalate_criticals": 0}}
    decision = loopguard.Guard.from_dict(rules).session("s1").before_call("read", {"path": "x"})
    assert (decision.action, decision.detector) == ("critical", "explode")
    assert decision.votes[0].code == "detector_fault"
    assert decision.faults == ("lgfake-explode[explode]: RuntimeError: kaput",)


def test_a_detector_returning_garbage_is_a_fault_not_a_crash(site: FakeSite) -> None:
    site.add_dist(
        "lgfake-garbage",
        {"garbage": "lgfake_garbage"},
        {
            "lgfake_garbage": detector_module(
                "def check(self, call, state, cfg):\n    return {'level': 'fatal'}", "garbage"
            )
        },
    )
    decision = guard(site).session("s1").before_call("read", {"path": "x"})
    assert decision.action == "allow"
    assert len(decision.faults) == 1 and decision.faults[0].startswith("lgfake-garbage[garbage]: ")


def test_a_distribution_without_a_name_does_not_break_discovery(site: FakeSite) -> None:
    site.add_example()
    site.add_dist("lgfake-nameless", {"bad": "lgfake_missing_module"})
    (site.root / "lgfake_nameless-0.1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nVersion: 0.1.0\n", encoding="utf-8"
    )
    registry = site.registry()
    assert ids(registry) == (*BUILTINS, "error_cascade")
    assert [(f.source, f.stage) for f in registry.faults] == [("unknown[bad]", "import")]


class _NamelessMetadata(dict):  # type: ignore[type-arg]
    """Metadata without `Name`, whose `[...]` fails as Python 3.12+ will (KeyError)."""

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)


class _NamelessDist:
    metadata = _NamelessMetadata({"Version": "0.1.0"})

    @property
    def name(self) -> str:  # Python 3.12 warns here, a later Python raises
        raise KeyError("Name")


class _BrokenDist:
    @property
    def metadata(self) -> Any:
        raise OSError("METADATA unreadable")


def test_a_missing_name_is_read_without_indexing_the_metadata() -> None:
    from loopguard.detection.plugins import distribution_name

    assert distribution_name(_NamelessDist()) == "unknown"
    assert distribution_name(_BrokenDist()) == "unknown"
    assert distribution_name(None) == "unknown"
