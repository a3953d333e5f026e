"""Adding a detector is its module and one entry-point line, nothing else.

A throw-away detector, written as a module and named by one `loopguard.detectors` entry
point (the path the built-ins take, from this distribution's pyproject.toml), is registered,
runs by default, takes its option defaults from its options schema alone (rules loading puts
them under every file), is validated by the rules schema and is listed by the CLI. No list,
rules pack or table elsewhere needs it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from plugin_fakes import BUILTINS, FakeSite, ids

import loopguard
from loopguard.cli import main

MODULE = '''
import loopguard
from loopguard.plugin import Detector, hookimpl


class Throwaway(Detector):
    """throwaway — a call to `boom` after `limit` others of it."""

    id = "throwaway"
    levels = ("critical",)
    options_schema = {
        "type": "object",
        "properties": {
            "limit": {"description": "Calls allowed.", "type": "integer", "minimum": 1,
                      "default": 2},
        },
    }

    def configure(self, options, config):
        return {**self.option_defaults(), **options}

    def check(self, call, state, cfg):
        seen = sum(1 for entry in state.history if entry.tool == "boom")
        if call.tool == "boom" and seen >= cfg["limit"]:
            return self.vote("critical", seen + 1, "boom", f"boom {seen + 1} times")
        return None


@hookimpl
def loopguard_register_detectors():
    return [Throwaway()]
'''


@pytest.fixture
def throwaway(site: FakeSite) -> FakeSite:
    site.add_dist(
        "lgfake-throwaway", {"throwaway": "lgfake_throwaway"}, {"lgfake_throwaway": MODULE}
    )
    site.registry()
    return site


def test_a_new_detector_is_registered_and_runs_by_default(throwaway: FakeSite) -> None:
    assert ids(throwaway.registry()) == (*BUILTINS, "throwaway")
    session = loopguard.Guard.from_yaml("version: 1\n").session("t")
    for n in range(2):
        assert session.before_call("boom", {"n": n}).action == "allow"
        session.after_call("boom", {"n": n}, result="ok")
    decision = session.before_call("boom", {"n": 9})
    assert (decision.action, decision.detector) == ("critical", "throwaway")


def test_its_option_defaults_come_from_its_schema_alone(
    throwaway: FakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["config", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["config"]["detectors"]["throwaway"] == {"limit": 2}
    assert result["sources"]["detectors.throwaway.limit"] == "options schema"
    guard = loopguard.Guard.from_yaml("version: 1\ndetectors: {throwaway: {limit: 5}}\n")
    assert guard.policy().config["detectors"]["throwaway"]["limit"] == 5


def test_its_options_are_validated_and_listed(
    throwaway: FakeSite, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("version: 1\ndetectors:\n  throwaway:\n    limt: 3\n", encoding="utf-8")
    assert main(["lint", "--format", "json", str(rules)]) == 1
    findings = json.loads(capsys.readouterr().out)
    assert [(f["line"], f["code"]) for f in findings] == [(4, "unknown-key")]
    assert "did you mean 'limit'" in findings[0]["message"]
    assert main(["detectors", "--format", "json"]) == 0
    listed = {d["id"]: d for d in json.loads(capsys.readouterr().out)["detectors"]}
    assert listed["throwaway"]["source"] == "lgfake-throwaway[throwaway]"
