"""Any output encoding works (issue 22, item 6): ascii, latin-1, `LC_ALL=C` with `PYTHONUTF8=0`.

A character the stream cannot encode is written as `\\uXXXX` (surrogate pairs past U+FFFF), the
JSON spelling: text stays readable, and JSON output stays valid JSON with the same values.
In process with real `TextIOWrapper` streams of each encoding; one subprocess per real
environment (`PYTHONIOENCODING`, the C locale) checks the interpreter's own streams.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopguard.cli import main

TOOL = "工具é😀"  # CJK, Latin-1 and a character past U+FFFF
RULES = 'version: 1\nkeyword_sets:\n  mots: ["café", "😀"]\n"clé": 1\n'
GOOD_RULES = 'version: 1\nkeyword_sets:\n  mots: ["café", "😀"]\n'


def _transcript(tmp_path: Path) -> Path:
    messages: list[Any] = [{"role": "user", "content": "vas-y é"}]
    for i in range(4):
        call = {"id": f"c{i}", "type": "function", "function": {"name": TOOL, "arguments": "{}"}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "même résultat"})
    path = tmp_path / "unicodé.json"
    path.write_text(json.dumps({"id": "s", "messages": messages}), encoding="utf-8")
    return path


class _Stream(io.TextIOWrapper):
    """A real text stream of one encoding over bytes, read back with `text()`."""

    def __init__(self, encoding: str) -> None:
        self.raw_bytes = io.BytesIO()
        super().__init__(self.raw_bytes, encoding=encoding, errors="strict")

    def text(self) -> str:
        self.flush()
        return self.raw_bytes.getvalue().decode(self.encoding)


COMMANDS = {
    "replay text": ["replay", "{t}"],
    "replay json": ["replay", "--format", "json", "{t}"],
    "replay github": ["replay", "--format", "github", "{t}"],
    "replay --explain": ["replay", "--explain", "1", "{t}"],
    "explain json": ["explain", "--format", "json", "-d", "1", "{t}"],
    "lint text": ["lint", "{r}"],
    "lint json": ["lint", "--format", "json", "{r}"],
    "config text": ["config", "--rules", "{g}"],
    "config json": ["config", "--format", "json", "--rules", "{g}"],
}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "r.yaml").write_text(RULES, encoding="utf-8")
    (tmp_path / "g.yaml").write_text(GOOD_RULES, encoding="utf-8")
    return {
        "t": str(_transcript(tmp_path)),
        "r": str(tmp_path / "r.yaml"),
        "g": str(tmp_path / "g.yaml"),
    }


CASES = [(c, "ascii") for c in sorted(COMMANDS)] + [
    ("replay text", "latin-1"),
    ("replay json", "latin-1"),
    ("lint text", "latin-1"),
]


@pytest.mark.parametrize(("command", "encoding"), CASES)
def test_every_command_writes_to_any_encoding(
    files: dict[str, str], monkeypatch: pytest.MonkeyPatch, encoding: str, command: str
) -> None:
    stdout, stderr = _Stream(encoding), _Stream(encoding)
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    argv = [word.format(**files) for word in COMMANDS[command]]
    code = main(argv)
    out, err = stdout.text(), stderr.text()
    assert code in (0, 1), err
    assert stdout.errors == "strict" and stderr.errors == "strict"  # put back afterwards
    if command.endswith("json"):
        documents = (
            [json.loads(line) for line in out.splitlines()]
            if command.startswith("replay")
            else [json.loads(out)]
        )
        shown = json.dumps(documents, ensure_ascii=False)
        value = {"lint": "clé", "config": "café"}.get(command.split()[0], TOOL)
        assert value in shown  # the value itself, read back from its escapes
    elif command.startswith(("replay", "explain")):
        tool = "\\u5de5\\u5177" + ("é" if encoding == "latin-1" else "\\u00e9") + "\\ud83d\\ude00"
        assert tool in out
    elif command.startswith("lint"):
        assert ("clé" if encoding == "latin-1" else "cl\\u00e9") in out
    else:
        assert ("café" if encoding == "latin-1" else "caf\\u00e9") in out


@pytest.mark.slow  # one interpreter per environment
@pytest.mark.parametrize(
    "env",
    [{"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C"}],
    ids=["ascii", "C-locale"],
)
def test_the_interpreters_own_streams(files: dict[str, str], env: dict[str, str]) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONIO"))}
    environ.update(env, PYTHONUTF8="0")
    done = subprocess.run(
        [sys.executable, "-m", "loopguard", "replay", "--format", "json", files["t"]],
        capture_output=True,
        env=environ,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    records = [json.loads(line) for line in done.stdout.decode("ascii").splitlines()]
    assert TOOL in {r.get("tool") for r in records}
