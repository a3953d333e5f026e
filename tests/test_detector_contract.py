"""The detector contract: one source of defaults, the engine free of built-in ids, and
`loopguard.plugin` as the one import path of every detector.

A detector declares its options (with their defaults) in its options schema, the
shared settings it reads, its lint checks, its bounded options, its OpenClaw
name and how its scratch state is stored; these tests hold the built-ins and
the engine to that.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from plugin_fakes import BUILTINS, FakeSite, fake_site

import loopguard
import loopguard.detectors
import loopguard.plugin
import loopguard.rules
from loopguard.detection.detector import Detector
from loopguard.detection.plugins import detector_problem, load_registry
from loopguard.stores.codec import decode, encode

# Paths of the package as imported: `engine/` and `detectors/` in an editable install, both
# inside site-packages/loopguard in a regular one (as CI installs it).
PACKAGE = Path(loopguard.__file__).resolve().parent
DETECTORS = Path(loopguard.detectors.__file__).resolve().parent
RULES = Path(loopguard.rules.__file__).resolve().parent
DEFAULT_RULES = yaml.safe_load((RULES / "default.yaml").read_text(encoding="utf-8"))
# Allowed: the finding code `cycle` (a mapping given to Guard.from_dict that contains
# itself; another namespace than the detector id), and the core rules block
# `loop_detection.post_compaction_guard` (OpenClaw's `postCompactionGuard` settings: a
# shared setting of the rules format, which the detector declares it reads).
ALLOWED = {
    ("config/source.py", "cycle"),
    ("lint/linter.py", "cycle"),
    ("config/json5.py", "post_compaction_guard"),
}


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSite]:
    with fake_site(tmp_path, monkeypatch) as fake:
        yield fake


def builtins() -> list[Any]:
    return [e.detector for e in load_registry().entries if e.builtin]


def _code_tokens(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of the names and string literals that are code, not docstrings or comments."""
    source = path.read_text(encoding="utf-8")
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                docstrings.add(body[0].lineno)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME:
            yield tok.start[0], tok.string
        elif tok.type == tokenize.STRING and tok.start[0] not in docstrings:
            yield tok.start[0], tok.string


def test_no_engine_module_names_a_builtin_detector() -> None:
    assert {d.id for d in builtins()} == set(BUILTINS)
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if DETECTORS in path.parents:
            continue  # the detectors themselves (inside the package when installed)
        where = path.relative_to(PACKAGE).as_posix()
        for line, text in _code_tokens(path):
            words = text.strip("\"'rbf").replace(".", " ").replace(":", " ").split()
            for ident in BUILTINS:
                # `cycle` is also an English word: in prose strings ("extends cycle") only
                # the whole string or a `detectors.cycle` path names the detector.
                named = (
                    ident in words
                    if ident != "cycle"
                    else text.strip("\"'") == ident or "detectors.cycle" in text
                )
                if named and (where, ident) not in ALLOWED:
                    found.append(f"{where}:{line}: {text}")
    assert found == []


def test_the_grep_sees_an_id_in_code() -> None:
    """The check above is not blind: the built-in detectors' own modules name their ids."""
    tokens = [text for _, text in _code_tokens(DETECTORS / "doom_loop_fuzzy.py")]
    assert '"doom_loop_fuzzy"' in tokens


def test_every_option_of_every_builtin_has_one_default_in_its_schema() -> None:
    for detector in builtins():
        properties = detector.options_schema.get("properties") or {}
        missing = [name for name, prop in properties.items() if "default" not in prop]
        assert missing == [], detector.id
        assert detector.option_defaults() == {k: p["default"] for k, p in properties.items()}


def test_the_bundled_default_rules_hold_only_enabled_switches() -> None:
    """Option defaults live in the schemas alone; the loader puts them under every file."""
    for ident, block in DEFAULT_RULES["detectors"].items():
        assert set(block) == {"enabled"}, ident
    effective = loopguard.Guard.default().policy().config["detectors"]
    for detector in builtins():
        options = effective[detector.id]
        assert {k: options[k] for k in detector.option_defaults()} == detector.option_defaults()


def test_configure_needs_no_literal_defaults() -> None:
    """No `options.get(name, literal)` fallbacks: configure reads the merged defaults."""
    for path in sorted(DETECTORS.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and len(node.args) == 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value is not None
            ):
                raise AssertionError(f"{path.name}:{node.lineno}: a literal default")


def test_builtins_compile_from_schema_defaults_alone() -> None:
    """Without any rules (configure({}, {})), each built-in gets the bundled values."""
    from loopguard.detectors.doom_loop_fuzzy import DoomLoopFuzzy

    cfg = DoomLoopFuzzy().configure({}, {})
    assert (cfg["window"], cfg["min_chars"], cfg["similarity"]) == (6, 1000, 0.95)
    for detector in builtins():
        detector.configure({}, {})


def test_the_builtins_import_only_the_plugin_module() -> None:
    for path in sorted(DETECTORS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("loopguard"):
                assert node.module == "loopguard.plugin" or node.module.startswith(
                    "loopguard.detectors."
                ), f"{path.name}: {node.module}"


def test_plugin_module_exports_what_it_lists() -> None:
    names = loopguard.plugin.__all__
    assert len(names) == len(set(names))
    for name in names:
        assert hasattr(loopguard.plugin, name), name
    for name in (
        "Detector",
        "Vote",
        "Call",
        "SessionState",
        "HistoryEntry",
        "hookimpl",
        "LintCheck",
        "LintContext",
        "Finding",
        "ROLLING",
        "thresholds",
    ):
        assert name in names
    assert len(names) <= 25  # what a detector author needs, nothing internal


def test_explain_paths_come_from_the_declarations() -> None:
    by_id = {d.id: d for d in builtins()}
    assert (
        by_id["known_poll_no_progress"].explain_paths()[-1]
        == "detectors.known_poll_no_progress.poll_tools"
    )
    assert by_id["doom_loop_exact"].explain_paths()[-1] == "outcomes.near_similarity"
    assert by_id["post_compaction_guard"].explain_paths() == (
        "loop_detection.post_compaction_guard.window_size",
    )


class _Duck:
    """Has a detector's attributes and methods but does not subclass Detector."""

    id = "duck"
    levels = ("warn",)
    options_schema = {"type": "object", "properties": {}}

    def configure(self, options: Any, config: Any) -> Any:
        return None

    def check(self, call: Any, state: Any, cfg: Any) -> Any:
        return None


class _Plain(Detector):
    """A detector that declares only what it must: the base class answers the rest."""

    id = "plain"
    levels = ("warn",)
    options_schema = {"type": "object", "properties": {"n": {"type": "integer", "default": 2}}}


def test_a_detector_must_subclass_the_base_class() -> None:
    problem = detector_problem(_Duck(), set())
    assert problem is not None and "subclass loopguard.plugin.Detector" in problem


def test_a_detector_that_declares_little_gets_the_base_classs_answers() -> None:
    plain = _Plain()
    assert detector_problem(plain, set()) is None
    assert (plain.settings, plain.scratch_codec, plain.option_defaults()) == ((), "json", {"n": 2})
    assert plain.explain_paths() == ("detectors.plain.n",)


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("settings", ("warning_threshold",), "dotted paths"),
        ("settings", ("detectors.x.y",), "outside `detectors.`"),
        ("bounded_by", (("threshold",),), "bounded_by"),
        ("openclaw_name", "Not Camel", "camelCase"),
        ("scratch_codec", "pickle", "scratch_codec"),
        ("lint_checks", "oops", "lint_checks"),
        ("defaults", {"n": 3}, "put each option's default in its options_schema"),
    ],
)
def test_a_bad_declaration_is_a_registration_problem(name: str, value: Any, words: str) -> None:
    plain = _Plain()
    setattr(plain, name, value)
    problem = detector_problem(plain, set())
    assert problem is not None and words in problem and "'plain'" in problem


def test_custom_scratch_round_trips_through_the_state_codec() -> None:
    guard = loopguard.Guard.from_dict({"version": 1, "extends": ["builtin:default"]})
    session = guard.session("s")
    session.compacted()
    session.before_call("build", {})
    session.after_call("build", {}, error="boom")
    state = session._state  # the armed post-compaction window holds digests (bytes)
    window = state.scratch["post_compaction_guard"]
    again = decode(encode(state), 30, True)
    assert again.scratch["post_compaction_guard"] == window and isinstance(window[0][1], bytes)


def test_an_openclaw_name_maps_to_the_detector_that_declares_it(site: FakeSite) -> None:
    site.add_dist(
        "lgfake-oc",
        {"oc": "lgfake_oc"},
        {
            "lgfake_oc": """
        from loopguard.plugin import Detector, hookimpl

        class Odd(Detector):
            id = "odd_detector"
            levels = ("warn",)
            openclaw_name = "strangeName"

        @hookimpl
        def loopguard_register_detectors():
            return [Odd()]
    """
        },
    )
    site.registry()
    from loopguard.config.layers import load

    loaded = load(
        "tools:\n  loopDetection:\n    detectors: {strangeName: false}\n", "text", "oc.yaml"
    )
    assert loaded.data["detectors"]["odd_detector"] == {"enabled": False}


def _unknown_after_failure(rules: dict[str, Any]) -> Any:
    session = loopguard.Guard.from_dict({"version": 1, **rules}).session("s")
    session.before_call("serach", {"q": "x"})
    session.after_call("serach", {"q": "x"}, error="Unknown tool: serach")
    return session.history()[-1].unknown


def test_unknown_tools_are_classified_by_the_engine_only_when_a_detector_reads_them() -> None:
    assert _unknown_after_failure({}) is None  # unknown_tool_repeat is off: no work, no mark
    assert _unknown_after_failure({"loop_detection": {"enabled": True}}) == "serach"
    # The patterns come from the rules (the option the detector's schema marks).
    mine = {
        "loop_detection": {"enabled": True},
        "detectors": {"unknown_tool_repeat": {"patterns": ["no such tool (?P<name>\\w+)"]}},
    }
    assert _unknown_after_failure(mine) is None


def test_a_plugin_reading_unknown_tools_sees_the_engines_classification(site: FakeSite) -> None:
    site.add_dist(
        "lgfake-unk",
        {"unk": "lgfake_unk"},
        {
            "lgfake_unk": """
        from loopguard.plugin import Detector, hookimpl

        SEEN = []

        class Missing(Detector):
            id = "missing_tool_seen"
            levels = ("warn",)
            reads_unknown_tools = True

            def after(self, call, state, cfg):
                SEEN.append(call.unknown)
                return None

        @hookimpl
        def loopguard_register_detectors():
            return [Missing()]
    """
        },
    )
    site.registry()
    import lgfake_unk  # type: ignore[import-not-found]

    assert _unknown_after_failure({}) == "serach"  # the plugin alone turns the step on
    assert lgfake_unk.SEEN == ["serach"]
