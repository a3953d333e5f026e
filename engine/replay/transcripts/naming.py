"""The session name of a file that does not name its own session.

Readers name a session by what the file says (its session id, a sub-agent's id, a run's id);
only a file that says nothing is named after its path, written the same way however it was
given (`./a/b.jsonl` and `a/b.jsonl` are `a/b.jsonl`), so two spellings of one file are one
session. Standard input is `<stdin>`.
"""

from __future__ import annotations

import os

from loopguard.replay.transcripts.source import STDIN, STDIN_NAME, Source


def file_session(source: Source) -> str:
    """The fallback session name of `source`: its path, normalised."""
    if source.path == STDIN:
        return STDIN_NAME
    return os.path.normpath(source.path)
