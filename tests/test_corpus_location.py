"""tests/test_corpus_twins.py finds the corpus beside the repository and fails, not skips, where
CI requires it (issue 24, item 16). Each case runs a copy of that module in a small inner
session laid out like a clone with `../shared` beside it (or without)."""

from __future__ import annotations

from pathlib import Path

import pytest

TWINS = Path(__file__).resolve().parent / "test_corpus_twins.py"


@pytest.fixture
def clone(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`<tmp>/repo/tests/` with a copy of test_corpus_twins.py, and no corpus anywhere yet."""
    monkeypatch.delenv("LOOPGUARD_CORPUS", raising=False)
    monkeypatch.delenv("LOOPGUARD_REQUIRE_CORPUS", raising=False)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    repo = pytester.path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n", encoding="utf-8")
    # another module name: the suite's own test_corpus_twins may be imported in this process
    (repo / "tests" / "test_twins_copy.py").write_bytes(TWINS.read_bytes())
    return repo


def inner(pytester: pytest.Pytester, repo: Path, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--rootdir", str(repo), *args, str(repo / "tests")
    )


def test_a_missing_corpus_skips_by_default(pytester: pytest.Pytester, clone: Path) -> None:
    result = inner(pytester, clone, "-rs")
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped", 0) > 0 and "failed" not in outcomes and "passed" not in outcomes
    assert result.ret == 0


def test_a_missing_corpus_fails_when_required(
    pytester: pytest.Pytester, clone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPGUARD_REQUIRE_CORPUS", "1")
    result = inner(pytester, clone)
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", 0) + outcomes.get("failed", 0) > 0 and result.ret == 1
    assert "passed" not in outcomes
    result.stdout.fnmatch_lines(["*LOOPGUARD_REQUIRE_CORPUS is set but the corpus is not at*"])


def test_the_corpus_beside_the_clone_is_found(
    pytester: pytest.Pytester, clone: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = clone.parent / "shared" / "corpus"
    (corpus / "originals" / "gemini").mkdir(parents=True)
    (corpus / "originals" / "gemini" / "x.json").write_text("[]", encoding="utf-8")
    (corpus / "labels.jsonl").write_text("{}\n", encoding="utf-8")
    monkeypatch.setenv("LOOPGUARD_REQUIRE_CORPUS", "1")
    monkeypatch.chdir(corpus)  # found from the module's place, not the working folder
    result = inner(pytester, clone, "-k", "the_corpus_has_its_originals")
    result.assert_outcomes(passed=1, deselected=result.parseoutcomes().get("deselected", 0))


def test_ci_requires_the_corpus() -> None:
    run = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "\nexport LOOPGUARD_REQUIRE_CORPUS=1\n" in run
