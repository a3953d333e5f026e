"""Replay and the runtime read a message split into content parts the same way.

They used to differ: replay joined parts with a newline, the runtime with nothing, so a
user turn `帮我看看` + `持仓` required `portfolio` live but not in replay.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import loopguard
from loopguard.replay.transcripts import transcript_text
from loopguard.text.content import content_text as message_text

SPLIT = [{"type": "text", "text": "帮我看看"}, {"type": "text", "text": "持仓"}]


def test_both_read_the_parts_as_one_text() -> None:
    assert (
        transcript_text(SPLIT) == message_text({"role": "user", "content": SPLIT}) == "帮我看看持仓"
    )


@pytest.mark.slow
def test_a_split_user_message_requires_the_tool_live_and_in_replay(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": SPLIT},
        {"role": "assistant", "content": "你的持仓整体不错。"},
        {"role": "user", "content": "列出文件"},  # replay needs one tool call to read the file
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "list_dir", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
        {"role": "assistant", "content": "a.txt"},
    ]
    live = loopguard.Guard.from_file("builtin:portfolio").session("s").begin_turn(messages[:1])
    assert live is not None and live.tool == "portfolio"

    path = tmp_path / "split.chat.json"
    path.write_text(json.dumps({"messages": messages}, ensure_ascii=False), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "loopguard", "replay", "--rules", "builtin:portfolio", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "1 skipped required tool" in done.stdout
