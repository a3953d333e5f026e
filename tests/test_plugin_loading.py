"""Plugin discovery (finding entry points, importing nothing) and loading (import, pluggy
validation, contract checks), each failure a fault named `package[entry]`.

Plugins are fake `*.dist-info` folders in `tmp_path` (see `plugin_fakes`).
"""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from plugin_fakes import BUILTINS, FakeSite, detector_module, ids

import loopguard
from loopguard.cli import main
from loopguard.detection.plugins import (
    OPTIONAL_PLUGINS,
    OWN_DISTRIBUTION,
    Plugin,
    build_registry,
    find_plugins,
)
from loopguard.lint.linter import checks


def faults(registry: Any) -> list[tuple[str, str]]:
    return [(fault.source, fault.stage) for fault in registry.faults]


def third_party(found: list[Plugin]) -> list[Plugin]:
    """Other distributions' plugins (loopguard's own optional ones: tests/test_otel_events.py)."""
    return [p for p in found if not p.builtin and p.package != OWN_DISTRIBUTION]


def detectors_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["detectors", *args])
    return code, capsys.readouterr().out


# -- discovery ---------------------------------------------------------------------------
def test_discovery_does_not_import_plugin_code(site: FakeSite) -> None:
    site.add_dist(
        "lgfake-boom",
        {"boom": "lgfake_boom"},
        {"lgfake_boom": "raise RuntimeError('imported at discovery')\n"},
    )
    found = find_plugins()
    assert third_party(found) == [Plugin("lgfake-boom", "boom", "lgfake_boom")]
    assert "lgfake_boom" not in sys.modules
    loaded = build_registry(found)
    assert [str(f) for f in loaded.faults] == [
        "lgfake-boom[boom]: import failed: RuntimeError: imported at discovery"
    ]
    assert [entry.id for entry in loaded.entries] == list(BUILTINS)


def test_a_blocked_or_disabled_plugin_is_never_imported(
    site: FakeSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.add_dist(
        "lgfake-boom",
        {"boom": "lgfake_boom"},
        {"lgfake_boom": "raise RuntimeError('imported although blocked')\n"},
    )
    assert third_party(find_plugins(blocked=["boom"])) == []
    assert third_party(find_plugins(blocked=["lgfake-boom[boom]"])) == []
    assert third_party(find_plugins(autoload=False)) == []
    monkeypatch.setenv("LOOPGUARD_BLOCK_PLUGINS", "boom")
    assert site.registry().faults == ()
    assert "lgfake_boom" not in sys.modules


def test_discovery_is_sorted_by_distribution_then_entry_after_the_builtins(site: FakeSite) -> None:
    site.add_dist("lgfake-zeta", {"zz": "lgfake_zz", "aa": "lgfake_aa:plugin"})
    site.add_dist("lgfake-alpha", {"only": "lgfake_alpha"})
    site.add_dist("lgfake-mid", {"m": "lgfake_mid"})
    found = find_plugins()
    assert [(p.package, p.name) for p in found if p.builtin] == [
        (OWN_DISTRIBUTION, name) for name in sorted((*BUILTINS, "lint_checks"))
    ]
    assert [p.source for p in third_party(found)] == [
        "lgfake-alpha[only]",
        "lgfake-mid[m]",
        "lgfake-zeta[aa]",
        "lgfake-zeta[zz]",
    ]
    assert third_party(found)[2].value == "lgfake_aa:plugin"
    assert find_plugins() == found


def test_a_distribution_found_twice_is_discovered_once(
    site: FakeSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.add_dist("lgfake-twice", {"t": "lgfake_twice"})
    other = tmp_path / "second-site"
    other.mkdir()
    (other / "lgfake_twice-0.1.0.dist-info").mkdir()
    for name in ("METADATA", "entry_points.txt"):
        source = site.root / "lgfake_twice-0.1.0.dist-info" / name
        (other / "lgfake_twice-0.1.0.dist-info" / name).write_bytes(source.read_bytes())
    monkeypatch.syspath_prepend(str(other))
    assert [p.source for p in third_party(find_plugins())] == ["lgfake-twice[t]"]


def test_the_builtins_are_this_distributions_entry_points_found_like_any_plugins() -> None:
    declared = {
        ep.name: ep.value
        for ep in metadata.distribution(OWN_DISTRIBUTION).entry_points
        if ep.group == "loopguard.detectors" and ep.name not in OPTIONAL_PLUGINS
    }
    for autoload in (True, False):  # LOOPGUARD_DISABLE_PLUGIN_AUTOLOAD keeps the built-ins
        found = {p.name: p.value for p in find_plugins(autoload=autoload) if p.builtin}
        assert found == declared
        assert list(found) == sorted(declared)
    # autoload off: the built-ins alone, not this distribution's optional plugins (otel)
    assert [p.name for p in find_plugins(autoload=False) if not p.builtin] == []


# -- loading: pluggy's validation ----------------------------------------------------------
BROKEN = {
    "no-marker": (
        "import loopguard\n\n\ndef loopguard_register_detectors():\n    return []\n",
        "loopguard_register_detectors is not marked with @loopguard.hookimpl",
    ),
    "no-hooks": (
        "VALUE = 1\n\n\ndef helper():\n    return []\n",
        "no @loopguard.hookimpl found (implement one of loopguard_register_detectors",
    ),
    "misspelt": (
        "import loopguard\n\n\n@loopguard.hookimpl\ndef loopguard_on_decisions(session_id, "
        "decision):\n    pass\n",
        "unknown hook 'loopguard_on_decisions'",
    ),
    "wrong-argument": (
        "import loopguard\n\n\n@loopguard.hookimpl\ndef loopguard_on_decision(session, "
        "decision):\n    pass\n",
        "Argument(s) {'session'} are declared in the hookimpl but can not be found",
    ),
    "argument-to-register": (
        "import loopguard\n\n\n@loopguard.hookimpl\n"
        "def loopguard_register_detectors(config):\n    return []\n",
        "Argument(s) {'config'}",
    ),
    "defaulted-argument": (
        "import loopguard\n\n\n@loopguard.hookimpl\ndef loopguard_on_decision("
        "session_id, decision=None):\n    pass\n",
        "loopguard_on_decision: parameter(s) decision have a default",
    ),
    "one-marked-one-not": (
        detector_module("", "half") + "\n\ndef loopguard_on_decision(session_id, "
        "decision):\n    pass\n",
        "loopguard_on_decision is not marked",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_plugin_pluggy_refuses_is_a_named_register_fault(
    site: FakeSite, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source, message = BROKEN[case]
    site.add_example()
    site.add_dist("lgfake-bad", {"bad": "lgfake_bad"}, {"lgfake_bad": source})
    registry = site.registry()
    assert ids(registry) == (*BUILTINS, "error_cascade")  # the detector of a refused plugin too
    assert faults(registry) == [("lgfake-bad[bad]", "register")]
    assert message in registry.faults[0].message and "\n" not in registry.faults[0].message
    assert "lgfake-bad[bad]" not in {p.plugin.source for p in registry.plugins}
    assert registry.plugin_manager.get_plugin("lgfake-bad[bad]") is None  # taken off again
    code, out = detectors_cli(capsys, "--strict")
    assert code == 1 and f"  lgfake-bad[bad]: register failed: {registry.faults[0].message}" in out
    assert out.endswith("10 detectors (9 built-in, 1 plugin), 1 fault\n")


def test_a_refused_plugin_leaves_the_others_listening(site: FakeSite) -> None:
    listener = (
        "import loopguard\nSEEN = []\n\n\n@loopguard.hookimpl\n"
        "def loopguard_on_decision(session_id, decision):\n    SEEN.append(decision.action)\n"
    )
    site.add_dist("lgfake-ear", {"ear": "lgfake_ear"}, {"lgfake_ear": listener})
    site.add_dist("lgfake-bad", {"bad": "lgfake_bad"}, {"lgfake_bad": BROKEN["wrong-argument"][0]})
    registry = site.registry()
    assert faults(registry) == [("lgfake-bad[bad]", "register")]
    hook = registry.plugin_manager.hook.loopguard_on_decision
    names = [impl.plugin_name for impl in hook.get_hookimpls()]
    assert [name for name in names if not name.startswith(OWN_DISTRIBUTION)] == ["lgfake-ear[ear]"]
    session = loopguard.Guard.from_dict(
        {"version": 1, "detectors": {"doom_loop_exact": {"window": 2, "threshold": 2}}}
    ).session("s")
    for i in range(3):
        session.before_call("read", {"path": "x"}, call_id=str(i))
        session.after_call("read", {"path": "x"}, result="same", call_id=str(i))
    assert sys.modules["lgfake_ear"].SEEN  # type: ignore[attr-defined]


def test_an_object_plugin_named_by_module_and_attribute_is_loaded(site: FakeSite) -> None:
    source = (
        "import loopguard\n\n\nclass Detector(loopguard.Detector):\n    id = 'objd'\n"
        "    levels = ('warn',)\n\n\nclass Plugin:\n    @loopguard.hookimpl\n"
        "    def loopguard_register_detectors(self):\n        return [Detector()]\n\n\n"
        "plugin = Plugin()\n"
    )
    site.add_dist(
        "lgfake-obj",
        {"obj": "lgfake_obj:plugin", "missing": "lgfake_obj:nothing"},
        {"lgfake_obj": source},
    )
    registry = site.registry()
    assert ids(registry) == (*BUILTINS, "objd")
    assert registry.get("objd").source == "lgfake-obj[obj]"  # type: ignore[union-attr]
    assert faults(registry) == [("lgfake-obj[missing]", "import")]
    assert "AttributeError" in registry.faults[0].message


def test_two_entries_naming_one_module_register_it_once(site: FakeSite) -> None:
    site.add_dist(
        "lgfake-dup",
        {"a": "lgfake_dup", "b": "lgfake_dup"},
        {"lgfake_dup": detector_module("", "dup")},
    )
    registry = site.registry()
    assert ids(registry) == (*BUILTINS, "dup")
    assert faults(registry) == [("lgfake-dup[b]", "register")]
    assert "already registered" in registry.faults[0].message


def test_plugins_known_to_pass_skip_the_contract_but_not_the_duplicate_id_check(
    site: FakeSite,
) -> None:
    """What the hook process does with its cache: `checked` says a plugin passed before."""
    site.add_dist("lgfake-k1", {"k1": "lgfake_k1"}, {"lgfake_k1": detector_module("", "twin")})
    twin = detector_module("levels = 'not a tuple'", "twin")
    site.add_dist("lgfake-k2", {"k2": "lgfake_k2"}, {"lgfake_k2": twin})
    found = [p for p in find_plugins() if p.package.startswith("lgfake-k")]
    registry = build_registry(found, checked=lambda plugin, obj: True)
    assert [entry.source for entry in registry.entries] == ["lgfake-k1[k1]"]
    assert [str(fault) for fault in registry.faults] == [
        "lgfake-k2[k2]: register failed: detector id 'twin' is already registered"
    ]
    unchecked = build_registry(found[1:])
    assert "`levels` must be a tuple" in unchecked.faults[0].message


# -- the lint-check hook goes through the same loading ----------------------------------------
LINT_PLUGIN = '''
import loopguard
from loopguard.lint.checks import LintCheck


def quiet(ctx):
    """Never reports anything."""
    return []


{marker}
def {hook}():
    return [LintCheck("{code}", "warning", quiet.__doc__, quiet)]
'''


@pytest.mark.parametrize(
    "marker, hook, message",
    [
        ("", "loopguard_register_lint_checks", "loopguard_register_lint_checks is not marked"),
        (
            "@loopguard.hookimpl",
            "loopguard_register_lint_check",
            "unknown hook 'loopguard_register_lint_check'",
        ),
    ],
)
def test_a_broken_lint_check_plugin_is_a_named_fault(
    site: FakeSite,
    tmp_path: Path,
    marker: str,
    hook: str,
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    site.add_dist(
        "lgfake-lint",
        {"quiet": "lgfake_lint"},
        {"lgfake_lint": LINT_PLUGIN.format(marker=marker, hook=hook, code="quiet-check")},
    )
    registry = site.registry()
    assert faults(registry) == [("lgfake-lint[quiet]", "register")]
    assert message in registry.faults[0].message
    assert "quiet-check" not in checks()
    code, out = detectors_cli(capsys, "--format", "json")
    assert code == 0
    assert json.loads(out)["faults"] == [
        {"source": "lgfake-lint[quiet]", "stage": "register", "message": registry.faults[0].message}
    ]
    rules = tmp_path / "r.yaml"
    rules.write_text("version: 1\n", encoding="utf-8")
    assert main(["lint", str(rules)]) == 0
    err = capsys.readouterr().err
    assert (
        f"loopguard: warning: lgfake-lint[quiet]: register failed: {registry.faults[0].message}"
        in err
    )


def test_lint_checks_of_plugins_come_in_load_order(site: FakeSite) -> None:
    for dist in ("lgfake-zz", "lgfake-aa"):  # both claim one code; installed zz first
        module = dist.replace("-", "_") + "_mod"
        site.add_dist(
            dist,
            {"lint": module},
            {
                module: LINT_PLUGIN.format(
                    marker="@loopguard.hookimpl",
                    hook="loopguard_register_lint_checks",
                    code="a-check",
                )
            },
        )
    site.registry()
    from loopguard.lint.linter import registry as lint_registry

    assert checks()["a-check"].origin == "lgfake-aa[lint]"  # sorted first, so it keeps the code
    assert lint_registry().problems == (
        "lgfake-zz[lint]: lint check 'a-check' is already registered by lgfake-aa[lint]",
    )
    assert checks()["unused-set"].origin == "loopguard"


def test_the_builtin_lint_checks_are_a_registered_plugin() -> None:
    from loopguard.detection.plugins import load_registry

    registry = load_registry()
    impls = registry.implementations("loopguard_register_lint_checks")
    assert [plugin.source for plugin, _ in impls] == [f"{OWN_DISTRIBUTION}[lint_checks]"]
    assert impls[0][0].builtin


def test_sys_exit_in_a_lint_check_hook_is_a_problem_not_the_end(
    site: FakeSite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site.add_dist(
        "lgfake-exit",
        {"exit": "lgfake_exit"},
        {
            "lgfake_exit": (
                "import loopguard, sys\n\n\n@loopguard.hookimpl\n"
                "def loopguard_register_lint_checks():\n    sys.exit(4)\n"
            )
        },
    )
    site.registry()
    rules = tmp_path / "r.yaml"
    rules.write_text("version: 1\n", encoding="utf-8")
    assert main(["lint", str(rules)]) == 0
    assert (
        "lgfake-exit[exit]: loopguard_register_lint_checks failed: SystemExit: 4"
        in capsys.readouterr().err
    )
    assert "unused-set" in checks()


def test_a_plugin_refused_halfway_through_leaves_no_hook_behind(site: FakeSite) -> None:
    """pluggy before 1.6 registers the hooks it met before the refused one: they are removed."""
    source = (
        "import loopguard\n\n\n@loopguard.hookimpl\ndef loopguard_on_decision(session_id, "
        "decision):\n    pass\n\n\n@loopguard.hookimpl\n"
        "def loopguard_register_lint_checks(config):\n    return []\n"
    )
    site.add_dist("lgfake-half", {"half": "lgfake_half"}, {"lgfake_half": source})
    site.add_example()
    registry = site.registry()
    assert faults(registry) == [("lgfake-half[half]", "register")]
    assert "Argument(s) {'config'}" in registry.faults[0].message
    names = {
        impl.plugin_name
        for caller in vars(registry.plugin_manager.hook).values()
        if hasattr(caller, "get_hookimpls")
        for impl in caller.get_hookimpls()
    }
    assert "lgfake-half[half]" not in names
    assert "error_cascade" in ids(registry)


def test_unhashable_plugin_objects_and_detectors_do_not_break_lint(
    site: FakeSite, tmp_path: Path
) -> None:
    source = (
        "import dataclasses\nimport loopguard\n\n\n@dataclasses.dataclass\n"
        "class Detector(loopguard.Detector):\n    id: str = 'eqd'\n    levels: tuple = ('warn',)\n"
        "\n\n@dataclasses.dataclass\nclass Plugin:\n    name: str = 'p'\n\n"
        "    @loopguard.hookimpl\n    def loopguard_register_detectors(self):\n"
        "        return [Detector()]\n\n\nplugin = Plugin()\n"
    )
    site.add_dist("lgfake-eq", {"eq": "lgfake_eq:plugin"}, {"lgfake_eq": source})
    assert "eqd" in ids(site.registry())
    rules = tmp_path / "r.yaml"
    rules.write_text("version: 1\ndetectors: {eqd: {enabled: false}}\n", encoding="utf-8")
    assert main(["lint", str(rules)]) == 0
    session = loopguard.Guard.from_dict({"version": 1}).session("s")
    assert session.before_call("read", {"path": "x"}).action == "allow"
