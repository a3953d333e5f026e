"""`--help` text from a command's docstring, re-flowed to the terminal's width.

argparse either re-flows a description into one paragraph (losing the breaks) or prints
it as written (`RawDescriptionHelpFormatter`: a docstring wrapped at 100 columns breaks
badly on an 80-column terminal). This keeps the paragraphs and re-wraps each one.
"""

from __future__ import annotations

import argparse
import re
import textwrap
from typing import Any


class ParagraphFormatter(argparse.HelpFormatter):
    """Re-wraps each blank-line-separated paragraph of the description and epilog."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = re.split(r"\n\s*\n", text.strip())
        return "\n\n".join(
            textwrap.fill(
                " ".join(p.split()), width, initial_indent=indent, subsequent_indent=indent
            )
            for p in paragraphs
        )


def after_first_paragraph(doc: str | None) -> str:
    """A module docstring without its first paragraph (the summary line): an epilog."""
    parts = (doc or "").strip().split("\n\n", 1)
    return parts[1] if len(parts) > 1 else ""


def add_command(subparsers: Any, name: str, summary: str, doc: str | None) -> Any:
    """A subcommand whose `--help` description is `doc` (its module docstring), re-flowed."""
    return subparsers.add_parser(
        name, help=summary, description=doc, formatter_class=ParagraphFormatter
    )
