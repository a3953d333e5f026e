"""Transcript readers: recorded agent conversations as one normalised event stream.

`open_transcript(path, input_format=None).events()` yields `events` records
(and warning `Finding`s) in file order, whatever the input format; `READERS`
(in `detect`) is the table of formats.
"""

from __future__ import annotations

from loopguard.replay.transcripts.detect import FORMATS, READERS, Transcript, open_transcript
from loopguard.replay.transcripts.events import (
    AssistantMessage,
    Compaction,
    EndOfSession,
    Event,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
    transcript_text,
)

__all__ = [
    "FORMATS",
    "READERS",
    "AssistantMessage",
    "Compaction",
    "EndOfSession",
    "Event",
    "SystemMessage",
    "ToolCall",
    "ToolResult",
    "Transcript",
    "UserMessage",
    "transcript_text",
    "open_transcript",
]
