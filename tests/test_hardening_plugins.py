"""Plugin isolation (issue #10): nothing a detector plugin returns, raises or declares takes
the host down.

Plugins are fake `*.dist-info` folders in `tmp_path` (see `plugin_fakes`).
"""

from __future__ import annotations

import logging
import subprocess
import sys
from typing import Any

import pytest
from plugin_fakes import BUILTINS, FakeSite, detector_module, ids

import loopguard
from loopguard.errors import RulesError

RULES: dict[str, Any] = {"version": 1}
CLOSED = {"aggregator": {"fail_mode": "closed", "escalate_criticals": 0}}


def install(site: FakeSite, body: str, ident: str = "hostile") -> Any:
    site.add_dist(
        "lgfake-hostile",
        {"hostile": "lgfake_hostile"},
        {"lgfake_hostile": detector_module(body, ident)},
    )
    return site.registry()


# -- votes -----------------------------------------------------------------------------
BAD_VOTES = {
    "count-str": "loopguard.Vote('hostile', 'warn', '3', 'k', 'm')",
    "count-float": "loopguard.Vote('hostile', 'warn', 2.5, 'k', 'm')",
    "count-bool": "loopguard.Vote('hostile', 'warn', True, 'k', 'm')",
    "key-unhashable": "loopguard.Vote('hostile', 'warn', 3, ['k'], 'm')",
    "no-message": "loopguard.Vote('hostile', 'warn', 3, 'k', None)",
    "message-bytes": "loopguard.Vote('hostile', 'breaker', 3, 'k', b'm')",
    "evidence": "loopguard.Vote('hostile', 'critical', 3, 'k', 'm', ['1'])",
    "detector-int": "loopguard.Vote(7, 'critical', 3, 'k', 'm')",
    "level-list": "loopguard.Vote('hostile', ['warn'], 3, 'k', 'm')",
    "code-none": "loopguard.Vote('hostile', 'warn', 3, 'k', 'm', (), None)",
    "tuple": "('hostile', 'warn', 3, 'k', 'm', (), '')",
}


@pytest.mark.parametrize("case", sorted(BAD_VOTES))
@pytest.mark.parametrize("closed", [False, True], ids=["open", "closed"])
def test_a_malformed_vote_is_a_named_fault(site: FakeSite, case: str, closed: bool) -> None:
    install(site, f"def check(self, call, state, cfg):\n    return {BAD_VOTES[case]}")
    rules = {**RULES, **(CLOSED if closed else {})}
    session = loopguard.Guard.from_dict(rules).session("s")
    decision = session.before_call("read", {"path": "x"})
    assert len(decision.faults) == 1 and decision.faults[0].startswith(
        "lgfake-hostile[hostile]: TypeError"
    )
    assert decision.action == ("critical" if closed else "allow")
    if closed:
        assert decision.votes[0].code == "detector_fault" and decision.message
    decision.to_dict()  # the record still serialises


def test_a_well_formed_plugin_vote_still_counts(site: FakeSite) -> None:
    install(
        site,
        "def check(self, call, state, cfg):\n    return self.vote('warn', 3, 'k', 'careful', (1,))",
    )
    decision = loopguard.Guard.from_dict(RULES).session("s").before_call("read", {})
    assert (decision.action, decision.detector, decision.faults) == ("warn", "hostile", ())


# -- configure -------------------------------------------------------------------------
@pytest.mark.parametrize("closed", [False, True], ids=["open", "closed"])
def test_a_raising_configure_is_contained(
    site: FakeSite, closed: bool, caplog: pytest.LogCaptureFixture
) -> None:
    install(site, "def configure(self, options, config):\n    raise ValueError('bad options')")
    guard = loopguard.Guard.from_dict({**RULES, **(CLOSED if closed else {})})
    with caplog.at_level(logging.ERROR, "loopguard"):
        session = guard.session("s")  # used to raise ValueError for every session
        decision = session.before_call("read", {"path": "x"})
    assert decision.faults == (
        "lgfake-hostile[hostile]: RuntimeError: configure failed: ValueError: bad options",
    )
    assert decision.action == ("critical" if closed else "allow")
    assert "lgfake-hostile[hostile]" in caplog.text
    guard.session("other")  # every session still opens


@pytest.mark.parametrize("exit_in", ["configure", "check"])
def test_sys_exit_in_plugin_code_does_not_end_the_host(site: FakeSite, exit_in: str) -> None:
    method = (
        "configure(self, options, config)"
        if exit_in == "configure"
        else "check(self, call, state, cfg)"
    )
    install(site, f"def {method}:\n    import sys\n    sys.exit(3)")
    decision = loopguard.Guard.from_dict(RULES).session("s").before_call("read", {"path": "x"})
    assert decision.faults and "SystemExit" in decision.faults[0]


def test_keyboard_interrupt_from_a_plugin_is_not_swallowed(site: FakeSite) -> None:
    install(site, "def check(self, call, state, cfg):\n    raise KeyboardInterrupt")
    session = loopguard.Guard.from_dict(RULES).session("s")
    with pytest.raises(KeyboardInterrupt):
        session.before_call("read", {"path": "x"})


def test_sys_exit_at_import_is_an_import_fault(site: FakeSite) -> None:
    site.add_dist(
        "lgfake-exit", {"exit": "lgfake_exit"}, {"lgfake_exit": "import sys\nsys.exit(2)\n"}
    )
    registry = site.registry()
    assert ids(registry) == BUILTINS
    assert [(f.source, f.stage) for f in registry.faults] == [("lgfake-exit[exit]", "import")]
    assert "SystemExit" in registry.faults[0].message


def test_sys_exit_in_an_on_decision_listener_is_contained(site: FakeSite) -> None:
    site.add_dist(
        "lgfake-listen",
        {"listen": "lgfake_listen"},
        {
            "lgfake_listen": (
                "import loopguard, sys\n\n@loopguard.hookimpl\n"
                "def loopguard_on_decision(session_id, decision):\n    sys.exit(1)\n"
            )
        },
    )
    site.registry()
    session = loopguard.Guard.from_dict(
        {**RULES, "detectors": {"doom_loop_exact": {"window": 2}}}
    ).session("s")
    for i in range(4):
        session.before_call("read", {"path": "x"}, call_id=str(i))
        session.after_call("read", {"path": "x"}, result="same", call_id=str(i))


# -- the contract at registration ------------------------------------------------------
DUCKS = {
    "not-a-subclass": (
        "class Duck:\n    id = 'duck'\n    levels = ('warn',)\n    options_schema = {}\n"
        "    def configure(self, options, config):\n        return None\n"
        "    def check(self, call, state, cfg):\n        return None\n",
        "is not a detector: subclass loopguard.plugin.Detector",
    ),
    "configure-not-callable": (
        "class Duck(loopguard.Detector):\n    id = 'duck'\n    levels = ('warn',)\n"
        "    configure = None\n",
        "`configure` is not callable",
    ),
    "levels-int": (
        "class Duck(loopguard.Detector):\n    id = 'duck'\n    levels = 5\n",
        "`levels`",
    ),
    "levels-unknown": (
        "class Duck(loopguard.Detector):\n    id = 'duck'\n    levels = ('fatal',)\n",
        "`levels`",
    ),
    "repr-raises": (
        "class Duck(loopguard.Detector):\n    id = 3\n    def __repr__(self):\n"
        "        raise RuntimeError('repr')\n",
        "<Duck object> has no valid `id`",
    ),
    "id-property-raises": (
        "class Duck(loopguard.Detector):\n    levels = ('warn',)\n    @property\n"
        "    def id(self):\n        raise SystemExit(1)\n",
        "cannot be inspected",
    ),
    "after-not-callable": (
        "class Duck(loopguard.Detector):\n    id = 'duck'\n    levels = ('warn',)\n    after = 5\n",
        "`after` is not callable",
    ),
    "gating": (
        "class Duck(loopguard.Detector):\n    id = 'duck'\n    levels = ('warn',)\n"
        "    gating = 'sometimes'\n",
        "`gating`",
    ),
    "remote-ref": (
        "class Duck(loopguard.Detector):\n    id = 'duck'\n    levels = ('warn',)\n"
        "    options_schema = {'type': 'object', 'properties': {'a': {'$ref': "
        "'https://example.com/s.json'}}}\n",
        "not local",
    ),
    "dangling-ref": (
        "class Duck(loopguard.Detector):\n    id = 'duck'\n    levels = ('warn',)\n"
        "    options_schema = {'type': 'object', 'properties': {'a': {'$ref': "
        "'#/$defs/missing'}}}\n",
        "does not resolve",
    ),
    "bomb-pattern": (
        "class Duck(loopguard.Detector):\n    id = 'duck'\n    levels = ('warn',)\n"
        "    options_schema = {'type': 'object', 'properties': {'a': {'type': 'string', "
        "'pattern': '(?:(?:(?:a{1000}){1000}){1000})'}}}\n",
        "too complex",
    ),
    "redos-pattern-properties": (
        "class Duck(loopguard.Detector):\n    id = 'duck'\n"
        "    levels = ('warn',)\n    options_schema = {'type': 'object', "
        "'patternProperties': {'^(a+)+$': {}}}\n",
        "nested quantifiers",
    ),
}


def install_duck(site: FakeSite, case: str) -> None:
    site.add_dist(
        "lgfake-duck",
        {"duck": "lgfake_duck"},
        {
            "lgfake_duck": (
                "import loopguard\n\n" + DUCKS[case][0] + "\n\n@loopguard.hookimpl\n"
                "def loopguard_register_detectors():\n    return [Duck()]\n"
            )
        },
    )


@pytest.mark.parametrize("case", sorted(DUCKS))
def test_a_detector_breaking_the_contract_is_refused_at_registration(
    site: FakeSite, case: str
) -> None:
    install_duck(site, case)
    registry = site.registry()
    assert ids(registry) == BUILTINS
    assert len(registry.faults) == 1 and DUCKS[case][1] in registry.faults[0].message, (
        registry.faults
    )
    loopguard.Guard.from_dict(RULES).session("s").before_call("read", {})  # the host still works


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(DUCKS))
def test_the_detectors_command_survives_a_detector_breaking_the_contract(
    site: FakeSite, case: str
) -> None:
    install_duck(site, case)
    result = subprocess.run(
        [sys.executable, "-m", "loopguard", "detectors"],
        capture_output=True,
        text=True,
        env=_env(site),
        timeout=120,
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr


def _env(site: FakeSite) -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site.root), env.get("PYTHONPATH", "")])
    return env


def test_a_local_ref_in_an_options_schema_is_supported(site: FakeSite) -> None:
    install(
        site,
        "options_schema = {'type': 'object', '$defs': {'n': {'type': 'integer', "
        "'minimum': 1}}, 'properties': {'limit': {'$ref': '#/$defs/n'}}}",
    )
    guard = loopguard.Guard.from_dict({**RULES, "detectors": {"hostile": {"limit": 2}}})
    assert guard.document["detectors"]["hostile"] == {"limit": 2}
    with pytest.raises(RulesError) as info:
        loopguard.Guard.from_dict({**RULES, "detectors": {"hostile": {"limit": 0}}})
    assert "must be >= 1" in str(info.value)


@pytest.mark.slow
def test_a_slow_schema_pattern_is_bounded(site: FakeSite) -> None:
    install(
        site,
        "options_schema = {'type': 'object', 'properties': {'names': {'type': 'array', "
        "'items': {'type': 'string', 'pattern': '^(a|a)*$'}}}}",
    )
    names = ["a" * 30 + "!"] * 200  # each a catastrophic backtrack for a plain `re` search
    with pytest.raises(RulesError) as info:
        loopguard.Guard.from_dict({**RULES, "detectors": {"hostile": {"names": names}}})
    assert all(f.code == "pattern" for f in info.value.findings)
    assert "in time" in str(info.value) or "does not match" in str(info.value)


@pytest.mark.parametrize("check", ["prune", "findings"])
def test_the_schema_patterns_of_one_document_share_one_time_budget(
    monkeypatch: pytest.MonkeyPatch, check: str
) -> None:
    """Both passes over a document (pruning rejected values, reporting them) bound all of its
    pattern matches together: a slow pattern costs the budget once, not once per value."""
    from loopguard.config import schema as rules_schema
    from loopguard.config.source import SourceDoc

    seen: list[Any] = []
    real = rules_schema.matches

    def spy(compiled: Any, text: str, deadline: Any = None) -> bool | None:
        seen.append(deadline)
        return real(compiled, text, deadline)

    monkeypatch.setattr(rules_schema, "matches", spy)
    schema = {"type": "array", "items": {"type": "string", "pattern": "^a+$"}}
    data = ["a", "b", "aa"]
    if check == "prune":
        assert {path for path, *_ in rules_schema._violations(data, schema)} == {(1,)}
    else:
        doc = SourceDoc("<test>", data)
        assert len(rules_schema.schema_findings(doc, schema)) == 1
    assert len(seen) == 3 and seen[0] is not None and all(d is seen[0] for d in seen)


# -- LOOPGUARD_DISABLE_PLUGIN_AUTOLOAD -------------------------------------------------
@pytest.mark.parametrize(
    "value, disabled",
    [
        ("1", True),
        ("true", True),
        ("TRUE", True),
        ("yes", True),
        ("on", True),
        (" On ", True),
        ("", False),
        ("0", False),
        ("false", False),
        ("False", False),
        ("no", False),
        ("OFF", False),
        (None, False),
    ],
)
def test_autoload_switch_is_parsed(value: str | None, disabled: bool) -> None:
    from loopguard.detection.plugins import autoload_disabled

    assert autoload_disabled(value) is disabled


def test_an_unknown_autoload_value_disables_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from loopguard.detection.plugins import autoload_disabled

    with caplog.at_level(logging.WARNING, "loopguard"):
        assert autoload_disabled("maybe") is True
    assert "maybe" in caplog.text


@pytest.mark.parametrize("value, loaded", [("False", True), ("off", True), ("yes", False)])
def test_autoload_switch_on_discovery(
    site: FakeSite, monkeypatch: pytest.MonkeyPatch, value: str, loaded: bool
) -> None:
    site.add_example()
    monkeypatch.setenv("LOOPGUARD_DISABLE_PLUGIN_AUTOLOAD", value)
    assert ("error_cascade" in ids(site.registry())) is loaded
