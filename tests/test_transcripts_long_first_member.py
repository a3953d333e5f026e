"""Format detection reads past the head when the head holds no marker (issue 24, item 14).

mini-swe-agent v1 writes `info` before `messages`, and `info.submission` is the whole diff:
a long one filled the head, and the file was refused as a format that cannot be told.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from loopguard.cli import main
from loopguard.errors import InputError
from loopguard.replay.transcripts import AssistantMessage, detect, open_transcript
from loopguard.replay.transcripts.source import HEAD_BYTES

SAMPLE = Path(__file__).resolve().parent / "agent_samples" / "mini-swe-agent-v1.traj.json"


def long_trajectory(patch_bytes: int) -> str:
    """The v1 sample with a `submission` of about `patch_bytes`, written as mini-swe-agent does."""
    data = json.loads(SAMPLE.read_text(encoding="utf-8"))
    line = '+a line of the patch, with "quotes" and the words tool_calls and role\n'
    data["info"]["submission"] = "diff --git a/x b/x\n" + line * (patch_bytes // len(line))
    assert list(data) == ["info", "messages", "trajectory_format"]
    assert list(data["info"])[:2] == ["exit_status", "submission"]
    return json.dumps(data, indent=2)


def calls(path: Path) -> list[list[str]]:
    return [
        [c.name for c in e.tool_calls]
        for e in open_transcript(str(path)).events()
        if isinstance(e, AssistantMessage) and e.tool_calls
    ]


@pytest.mark.parametrize("patch_bytes", [HEAD_BYTES * 3, 3 * 1024 * 1024])
def test_a_v1_trajectory_with_a_long_submission_is_recognised(
    tmp_path: Path, patch_bytes: int
) -> None:
    path = tmp_path / "run.traj.json"
    path.write_text(long_trajectory(patch_bytes), encoding="utf-8")
    assert open_transcript(str(path)).format == "mini-swe-agent"
    assert calls(path) == [["bash"], ["bash"], ["bash"]]


def test_gzipped_too(tmp_path: Path) -> None:
    path = tmp_path / "run.traj.json.gz"
    path.write_bytes(gzip.compress(long_trajectory(HEAD_BYTES * 2).encode()))
    assert open_transcript(str(path)).format == "mini-swe-agent"


def test_the_cli_replays_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.traj.json"
    path.write_text(long_trajectory(HEAD_BYTES * 2), encoding="utf-8")
    assert main(["replay", str(path)]) == 0
    assert "1 turn, 3 tool calls" in capsys.readouterr().out


def test_a_marker_cut_by_a_window_edge_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = long_trajectory(HEAD_BYTES * 2)
    at = text.index('"mini_version"')
    monkeypatch.setattr(detect, "WINDOW_BYTES", at + 5)  # the first window ends inside it
    path = tmp_path / "run.traj.json"
    path.write_text(text, encoding="utf-8")
    assert open_transcript(str(path)).format == "mini-swe-agent"


def test_detection_stops_after_its_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(detect, "SCAN_MAX_BYTES", HEAD_BYTES * 2)
    path = tmp_path / "run.traj.json"
    path.write_text(long_trajectory(HEAD_BYTES * 3), encoding="utf-8")
    with pytest.raises(InputError) as info:
        open_transcript(str(path))
    assert "cannot tell the transcript format" in info.value.findings[0].message
