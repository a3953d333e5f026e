"""The transcript files `replay` and `explain` were given, each once.

A file named twice (`a.jsonl ./a.jsonl`, or overlapping globs) would be replayed twice into
the same session: the second pass starts where the first ended ("turn 2, call 6") and every
call repeats the first pass, so it reads as one long loop. Each file is replayed once and a
warning says which names were dropped.
"""

from __future__ import annotations

import os
import sys


def _identity(name: str) -> str:
    if name == "-":
        return name  # standard input: the reader says when it is given twice
    return os.path.realpath(name) if os.path.exists(name) else os.path.normpath(name)


def once_each(files: list[str], prog: str = "loopguard replay") -> list[str]:
    """`files` with later mentions of a file already listed left out (warned on stderr)."""
    kept: list[str] = []
    first: dict[str, str] = {}
    for name in files:
        key = _identity(name)
        if key in first and name != "-":
            same = "" if first[key] == name else f" (as {first[key]})"
            print(
                f"{prog}: warning: {name} is given twice{same}; it is replayed once",
                file=sys.stderr,
            )
            continue
        first.setdefault(key, name)
        kept.append(name)
    return kept
