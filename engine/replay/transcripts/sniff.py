"""The text of a file past its head, for format detection when the head holds no marker.

A document may open with a member longer than the head: a mini-swe-agent trajectory writes
`info` first, and its `submission` is the whole diff. Detection then reads on, one window at a
time (`WINDOW_BYTES`, each with the last `OVERLAP_CHARS` of the one before, so a marker that a
window edge cuts is still seen), at most `SCAN_MAX_BYTES` of the file; memory stays flat.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator

from loopguard.replay.transcripts.source import Source

SCAN_MAX_BYTES = 32 * 1024 * 1024
WINDOW_BYTES = 1024 * 1024
OVERLAP_CHARS = 512


def windows(source: Source) -> Iterator[str]:
    """Text windows from the start of `source` (decompressed), at most SCAN_MAX_BYTES."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    read, carry = 0, ""
    with source.open_binary() as fh:
        while read < SCAN_MAX_BYTES:
            raw = fh.read(min(WINDOW_BYTES, SCAN_MAX_BYTES - read))
            if not raw:
                return
            read += len(raw)
            text = carry + decoder.decode(raw)
            yield text
            carry = text[-OVERLAP_CHARS:]
