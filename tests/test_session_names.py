"""Sessions are named by what the file says, not by how its path was written (issue 24, item 18).

A Claude Code sub-agent session used to be named after the path given: `./a/b.jsonl` and
`a/b.jsonl` were two sessions, and the name changed with the working folder. Now a session is
its file's session id (a sub-agent's: the parent's id and its agent id); a file that names no
session is named after its path, written one way however it was given.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from loopguard.cli import main
from loopguard.errors import InputError
from loopguard.findings import Finding
from loopguard.replay.transcripts import open_transcript

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted(
    p
    for folder in (ROOT / "tests" / "agent_samples", ROOT / "examples" / "transcripts")
    for p in folder.iterdir()
    if p.is_file() and not p.name.endswith((".yaml", ".md", ".py"))
)
NAMED = {  # sample -> the sessions its content names
    "claude-code.jsonl": ["s-1", "s-1/agent-a77"],
    "codex.jsonl": ["0199a000-0000-7000-8000-000000000001"],
    "codex-legacy.jsonl": ["5e1c0000-0000-4000-8000-000000000002"],
    "gemini-cli-session.json": ["5d0c1f2e-8a4b-4c71-9e36-2b7f0a9c4d15"],
    "gemini-cli-session.jsonl": ["0b7e3c9a-2f41-4d6e-8c15-93a0d2e7f4b8"],
}


def sessions(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    """The sessions `loopguard replay` reports for the files `argv`, in order."""
    main(["replay", "--format", "json", *argv])
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return [r["session"] for r in records if r["record"] == "session"]


def named(path: str) -> list[str]:
    """The sessions a file's events name, in order of appearance (what the replay reports)."""
    found: dict[str, None] = {}
    try:
        for event in open_transcript(path).events():
            if not isinstance(event, Finding):
                found[event.session] = None
    except InputError:  # a file that breaks off: the sessions met before
        pass
    return list(found)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`<tmp>/a/` holding a copy of every sample; the working folder is `<tmp>`."""
    (tmp_path / "a").mkdir()
    for sample in SAMPLES:
        shutil.copy(sample, tmp_path / "a" / sample.name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_two_spellings_of_a_path_are_one_session_name(folder: Path, sample: Path) -> None:
    plain = named(f"a/{sample.name}")
    assert plain and named(f"./a/{sample.name}") == plain
    assert named(f"a//{sample.name}") == plain


@pytest.mark.parametrize("name", sorted(NAMED))
def test_a_session_the_file_names_keeps_its_name_from_any_folder(
    folder: Path, name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert sessions(capsys, f"a/{name}") == NAMED[name]  # what the replay reports
    assert named(str(folder / "a" / name)) == NAMED[name]
    monkeypatch.chdir(folder / "a")
    assert named(name) == NAMED[name]


def claude_lines(session: str, agent: str | None) -> str:
    side = {"isSidechain": agent is not None, **({"agentId": agent} if agent else {})}
    lines = [
        {
            "type": "user",
            "sessionId": session,
            **side,
            "message": {"role": "user", "content": "go"},
        },
        {
            "type": "assistant",
            "sessionId": session,
            **side,
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"c": 1}}],
            },
        },
        {
            "type": "user",
            "sessionId": session,
            **side,
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
            },
        },
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)


def test_a_claude_code_sub_agent_file_is_named_by_its_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "projects" / "-src-app"
    (project / "8f1c" / "subagents").mkdir(parents=True)
    (project / "8f1c.jsonl").write_text(claude_lines("8f1c", None), encoding="utf-8")
    sub = project / "8f1c" / "subagents" / "agent-a9d.jsonl"
    sub.write_text(claude_lines("8f1c", "a9d"), encoding="utf-8")
    monkeypatch.chdir(project)
    names = sessions(capsys, "8f1c.jsonl", "./8f1c/subagents/agent-a9d.jsonl")
    assert names == ["8f1c", "8f1c/agent-a9d"]
    monkeypatch.chdir(tmp_path)
    assert sessions(capsys, str(sub.relative_to(tmp_path))) == ["8f1c/agent-a9d"]


def test_the_text_report_shows_the_file_beside_a_named_session(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["replay", "./a/codex.jsonl"])
    out = capsys.readouterr().out
    assert "session 0199a000-0000-7000-8000-000000000001 (./a/codex.jsonl)" in out
