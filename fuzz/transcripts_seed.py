"""Seed inputs for `transcripts_target.py`: `python fuzz/transcripts_seed.py fuzz/corpus-transcripts`.

Seeds are the agent samples of the test suite and a small chat, Responses and Anthropic
transcript, each under format detection and under its own forced reader (the first
byte of an input picks the reader, see the target), and one gzipped.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from transcripts_target import CHOICES  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CALL = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"p\": 1}"}}
SMALL = {
    "openai-chat": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [CALL]},
                    {"role": "tool", "tool_call_id": "c1", "content": "ok"}, {"role": "assistant", "content": "done"}],
    "openai-responses": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                         {"type": "function_call", "call_id": "a", "name": "read", "arguments": "{}"},
                         {"type": "function_call_output", "call_id": "a", "output": "ok"}],
    "anthropic": [{"role": "user", "content": "hi"},
                  {"role": "assistant", "content": [{"type": "tool_use", "id": "u", "name": "read", "input": {}}]},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u", "content": "ok"}]}],
}


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    seeds: list[bytes] = []
    for path in sorted((ROOT / "tests" / "agent_samples").iterdir()):
        seeds.append(bytes([0]) + path.read_bytes())
    for name, messages in SMALL.items():
        document = json.dumps(messages).encode()
        lines = "\n".join(json.dumps(m) for m in messages).encode() + b"\n"
        for choice in (0, CHOICES.index(name)):
            seeds += [bytes([choice]) + document, bytes([choice]) + lines]
        seeds.append(bytes([0]) + gzip.compress(lines, mtime=0))
    for seed in seeds:
        (out / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
    print(f"{len(seeds)} seeds in {out}")


if __name__ == "__main__":
    main()
