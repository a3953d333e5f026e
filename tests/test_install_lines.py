"""The docs' install lines work from a clone (issue 24, item 12).

The distribution is not on a package index: `pip install "loopguard-engine[x]"` fails
for a newcomer with a clone. Every extra is shown in its clone form (`pip install ".[x]"`),
and an index form only next to words saying where it applies.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
INDEX_FORM = re.compile(r"""(pip|pipx|uv tool) install ['"]?loopguard-engine\[""")
EXTRAS = [
    "langchain",
    "openai-agents",
    "claude-agent-sdk",
    "pydantic-ai",
    "google-adk",
    "strands",
    "crewai",
    "agent-framework",
    "redis",
]


def paragraphs(path: Path) -> list[str]:
    return re.split(r"\n\s*\n", path.read_text("utf-8"))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_an_index_install_line_says_where_it_applies(doc: Path) -> None:
    for paragraph in paragraphs(doc):
        if INDEX_FORM.search(paragraph):
            assert "package index" in paragraph, paragraph


@pytest.mark.parametrize("extra", EXTRAS)
def test_each_extra_has_its_clone_install_line_in_the_readme(extra: str) -> None:
    assert f'pip install ".[{extra}]"' in (ROOT / "README.md").read_text("utf-8")


def test_the_extras_named_are_the_distributions() -> None:
    declared = metadata.metadata("loopguard-engine").get_all("Provides-Extra") or []
    assert set(EXTRAS) <= set(declared)
