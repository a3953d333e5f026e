"""Regenerate tests/hook_samples/codex/ and .../gemini/: run each real CLI offline
against its fake model with a capture hook on every event, and write one JSON file per event
kind (the stdin payload as the agent sent it, the temp folder replaced by `<tmp>`).

    python tests/agent_fakes/capture_payloads.py [codex] [gemini]

The scripted model asks for a failing shell command, a succeeding one, two calls in one
response (parallel), then answers with text. The PreToolUse / BeforeTool capture sleeps 0.5 s
so the records show whether parallel hooks overlap (`started` / `ended`).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_fakes.agents import (  # noqa: E402 — the tests folder is on the path now
    CODEX_EVENTS,
    GEMINI_EVENTS,
    REPO,
    CodexAgent,
    GeminiAgent,
    capture_command,
    read_captures,
)
from agent_fakes.fake_gemini_api import FakeGeminiApi  # noqa: E402
from agent_fakes.fake_responses_api import FakeResponsesApi  # noqa: E402

OUT = REPO / "tests" / "hook_samples"
PROMPT = "Check the project files."


def codex_turns() -> list[Any]:
    shell = "exec_command"
    return [
        [(shell, {"cmd": "cat missing.txt"})],
        [(shell, {"cmd": "echo hello"})],
        [(shell, {"cmd": "cat notes.txt"}), (shell, {"cmd": "echo two"})],
        "All done.",
    ]


def gemini_turns() -> list[Any]:
    shell = "run_shell_command"
    return [
        [(shell, {"command": "cat missing.txt"})],
        [(shell, {"command": "echo hello"})],
        [("read_file", {"file_path": "notes.txt"}), (shell, {"command": "echo two"})],
        [("read_file", {"file_path": "missing.txt"})],
        "All done.",
    ]


def capture(agent_name: str, root: Path) -> list[dict[str, Any]]:
    capture_file = root / "captures.jsonl"
    if agent_name == "codex":
        fake: Any = FakeResponsesApi(codex_turns())
        events, pre = CODEX_EVENTS, "PreToolUse"
    else:
        fake = FakeGeminiApi(gemini_turns())
        events, pre = GEMINI_EVENTS, "BeforeTool"
    with fake:
        agent: Any = (CodexAgent if agent_name == "codex" else GeminiAgent)(root, fake.base_url)
        (agent.project / "notes.txt").write_text("remember the milk\n", encoding="utf-8")
        agent.write_hooks(
            {e: capture_command(capture_file, e, 0.5 if e == pre else 0.0) for e in events}
        )
        run = agent.run(PROMPT)
    print(
        f"{agent_name}: exit {run.returncode} in {run.seconds:.1f} s, "
        f"{len(fake.requests)} model calls",
        file=sys.stderr,
    )
    if run.returncode != 0:
        print(run.stdout[-2000:], run.stderr[-2000:], file=sys.stderr)
    return read_captures(capture_file)


def scrub(value: Any, root: Path) -> Any:
    """The payload with the temp folder replaced by `<tmp>`."""
    text = json.dumps(value, ensure_ascii=False)
    for form in {str(root), str(root.resolve())}:
        text = text.replace(form, "<tmp>")
    return json.loads(text)


def variant(agent_name: str, record: dict[str, Any]) -> str:
    """The fixture name of one captured payload: the event, with a suffix for special cases."""
    payload = record["stdin"]
    name = str(payload.get("hook_event_name") or record["label"])
    args = json.dumps(payload.get("tool_input") or {})
    if name in ("PostToolUse", "AfterTool") and "missing.txt" in args:
        return name + ("-failed" if "cat " in args else "-error")
    if name in ("PreToolUse", "BeforeTool") and ("echo two" in args or "notes.txt" in args):
        return name + "-parallel"
    if name in ("PostToolUse", "AfterTool") and "notes.txt" in args:
        return name + "-parallel"
    return name


def write(agent_name: str, records: list[dict[str, Any]], root: Path) -> list[str]:
    folder = OUT / agent_name
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, Any] = {}
    for record in records:
        if not isinstance(record["stdin"], dict):
            continue
        written.setdefault(variant(agent_name, record), scrub(record["stdin"], root))
    for name, payload in written.items():
        (folder / f"{name}.json").write_text(
            json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    return sorted(written)


def main(argv: list[str]) -> int:
    for agent_name in argv or ["codex", "gemini"]:
        with tempfile.TemporaryDirectory(prefix="lg-capture-") as tmp:
            root = Path(tmp)
            records = capture(agent_name, root)
            timeline = [
                (
                    r["label"],
                    round(r["started"] - records[0]["started"], 2),
                    round(r["ended"] - records[0]["started"], 2),
                )
                for r in records
            ]
            print(json.dumps(timeline), file=sys.stderr)
            print(agent_name, write(agent_name, records, root))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
