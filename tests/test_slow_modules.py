"""slow_modules: under exactly `-m "not slow"` a module marked slow as a whole is not imported."""

from __future__ import annotations

from pathlib import Path

import pytest
from slow_modules import INNER_LOOP, declares_slow

SLOW_MODULE = """
import pytest

pytestmark = pytest.mark.slow  # a comment after the marker is fine

raise RuntimeError("the slow module was imported")


def test_slow():
    pass
"""
FAST_MODULE = """
import pytest


@pytest.mark.slow
def test_marked_slow():
    pass


def test_fast():
    pass
"""


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # no third-party plugins: faster
    pytester.makeini("[pytest]\nmarkers =\n    slow: slow\n")
    pytester.makepyfile(test_whole_slow=SLOW_MODULE, test_partly_slow=FAST_MODULE)
    return pytester


@pytest.mark.parametrize("expression", ["not slow", "  not   slow "])
def test_the_inner_loop_does_not_import_a_whole_slow_module(
    inner: pytest.Pytester, expression: str
) -> None:
    result = inner.runpytest_inprocess(
        "-p", "slow_modules", "-p", "no:cacheprovider", "-m", expression
    )
    result.assert_outcomes(passed=1, deselected=1)
    assert "the slow module was imported" not in result.stdout.str()


@pytest.mark.parametrize("args", [[], ["-m", "slow"], ["-m", "not slow and not other"]])
def test_any_other_selection_imports_it(inner: pytest.Pytester, args: list[str]) -> None:
    result = inner.runpytest_inprocess("-p", "slow_modules", "-p", "no:cacheprovider", *args)
    assert result.ret != 0 and "the slow module was imported" in result.stdout.str()


def test_only_a_top_level_pytestmark_line_declares_a_module_slow(tmp_path: Path) -> None:
    cases = {
        "pytestmark = pytest.mark.slow\n": True,
        "import pytest\npytestmark = pytest.mark.slow  # why\n": True,
        "pytestmark = (\n    pytest.mark.slow\n)  # as a formatter wraps it\n": True,
        "pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings('ignore')]\n": True,
        "if True:\n    pytestmark = pytest.mark.slow\n": False,  # not at the top level
        "pytestmark = pytest.mark.slowish\n": False,
        "@pytest.mark.slow\ndef test_x(): pass\n": False,
        "TEXT = '''\npytestmark = pytest.mark.slow\n'''\n": False,  # inside a string
        "pytestmark = pytest.mark.slow\n(": False,  # not Python: pytest reports it
    }
    for i, (text, slow) in enumerate(cases.items()):
        path = tmp_path / f"test_{i}.py"
        path.write_text(text, encoding="utf-8")
        assert declares_slow(path) is slow, text
    assert declares_slow(tmp_path / "missing.py") is False


def test_the_readme_documents_this_exact_inner_loop() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert f'python -m pytest -m "{INNER_LOOP}"' in readme
