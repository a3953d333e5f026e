"""Seed inputs for `transcripts_target.py`.

Run: `python fuzz/transcripts_seed.py fuzz/corpus-transcripts`.

Seeds are the agent samples of the test suite and the small chat, Responses, Anthropic,
Claude Code and Codex transcripts of its property tests, each under format detection and
under its own forced reader (the first byte of an input picks the reader, see the target),
and one gzipped.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(Path(__file__).resolve().parent), str(ROOT / "tests")]
from test_hardening_props import VALID  # noqa: E402  (the property tests' small transcripts)
from transcripts_target import CHOICES  # noqa: E402


def all_seeds() -> list[bytes]:
    """Every seed input, in a fixed order."""
    seeds: list[bytes] = []
    for path in sorted((ROOT / "tests" / "agent_samples").iterdir()):
        seeds.append(bytes([0]) + path.read_bytes())
    for name, messages in VALID.items():
        document = json.dumps(messages).encode()
        lines = "\n".join(json.dumps(m) for m in messages).encode() + b"\n"
        for choice in (0, CHOICES.index(name)):
            seeds += [bytes([choice]) + document, bytes([choice]) + lines]
        seeds.append(bytes([0]) + gzip.compress(lines, mtime=0))
    return seeds


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    seeds = all_seeds()
    for seed in seeds:
        (out / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
    print(f"{len(seeds)} seeds in {out}")


if __name__ == "__main__":
    main()
