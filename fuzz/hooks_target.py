"""Fuzz target for the hook event reader: `loopguard hook DIALECT` on any stdin (issue 22).

    python fuzz/mutate.py hooks --runs 200000                            # no dependency
    python fuzz/hooks_target.py --seed fuzz/corpus-hooks                 # atheris: seeds, then
    python fuzz/hooks_target.py fuzz/corpus-hooks -max_total_time=600

The first input byte picks the dialect (claude, codex, gemini, copilot, cursor) and whether
the event name comes from the command line (`--event`, for payloads that carry none); the
rest is the event's bytes on stdin. The property, for what `runner.main` does before it
touches any state: reading the bytes, parsing the JSON and the dialect's `read` give a
`HookEvent` whose fields have their declared types, or raise one of the errors the runner
answers with "the call is allowed" (`EventError`, `ValueError`, `RecursionError`); and every
answer (deny, note, end of turn, retry, a message to the user) renders to JSON the agent can
read. One input in sixteen also runs the whole hook (`runner.main`, its state in a
temporary folder): exit code 0, 1 or 2 and never an exception.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

try:
    import atheris
except ImportError:  # the suite's short run (fuzz/mutate.py) needs no atheris
    atheris = None

if atheris is not None:
    with atheris.instrument_imports(include=["loopguard"]):
        from loopguard.hooks import event as ev
        from loopguard.hooks import runner
        from loopguard.hooks.dialects import DIALECTS
else:
    from loopguard.hooks import event as ev
    from loopguard.hooks import runner
    from loopguard.hooks.dialects import DIALECTS

NAMES = tuple(DIALECTS)
SAMPLES = Path(__file__).resolve().parent.parent / "tests" / "hook_samples"
ANSWERS = (
    ev.Answer(),
    ev.Answer(deny="[loopguard] Blocked: read_file was called 3 times."),
    ev.Answer(context="[loopguard] note", user="loopguard warned"),
    ev.Answer(deny="no", end_turn="stop now", closed=True),
    ev.Answer(retry="call the required tool first"),
)
_OPTIONAL_STR = ("error", "call_id", "text", "cwd")
_home: str | None = None


def _check(event: Any) -> None:
    assert type(event) is ev.HookEvent, type(event)
    assert event.kind in ev.KINDS, event.kind
    for name in ("name", "session", "tool", "prompt"):
        assert type(getattr(event, name)) is str, (name, getattr(event, name))
    for name in _OPTIONAL_STR:
        value = getattr(event, name)
        assert value is None or type(value) is str, (name, value)
    if event.kind != ev.IGNORED:
        assert event.session, "an event acted on has a session"
    json.dumps([event.args, event.result], default=str)  # JSON data from the payload


def _render(dialect: Any, event: Any) -> None:
    for answer in ANSWERS:
        rendered = dialect.render(event, answer)
        assert type(rendered) is ev.Rendered
        assert rendered.output is None or type(rendered.output) is dict
        json.dumps(rendered.output, ensure_ascii=True)
        assert type(rendered.exit_code) is int and type(rendered.stderr) is str


def _whole_hook(argv: list[str], body: bytes) -> None:
    """`runner.main` with a private state folder: 0, 1 or 2, and nothing raised."""
    global _home
    if _home is None:
        _home = tempfile.mkdtemp(prefix="loopguard-fuzz-hooks-")
        atexit.register(shutil.rmtree, _home, True)
    saved = {k: os.environ.get(k) for k in ("XDG_STATE_HOME", "XDG_CACHE_HOME")}
    os.environ["XDG_STATE_HOME"] = os.path.join(_home, "state")
    os.environ["XDG_CACHE_HOME"] = os.path.join(_home, "cache")
    try:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err):
            code = runner.main(argv, stdin=io.BytesIO(body), stdout=out)
        assert code in (0, 1, 2), code
        assert "Traceback" not in err.getvalue()
        if out.getvalue():
            json.loads(out.getvalue())
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def target(data: bytes) -> None:
    if not data:
        return
    choice, body = data[0], data[1:]
    name = NAMES[choice % len(NAMES)]
    dialect = DIALECTS[name]
    given = sorted(dialect.events)[(choice >> 3) % len(dialect.events)] if choice & 4 else None
    if choice >= 0xF0:
        _whole_hook([name] + (["--event", given] if given else []), body)
        return
    try:
        raw = runner._read(io.BytesIO(body))
        payload = json.loads(raw)
        event = dialect.read(payload, given)
    except (ev.EventError, ValueError, RecursionError):
        return  # runner.main answers these: the call is allowed
    _check(event)
    _render(dialect, event)


def _kitchen_sink(dialect: Any, event_name: str) -> dict[str, Any]:
    """A payload with the keys any dialect reads, for one of its events."""
    return {
        dialect.event_key: event_name,
        "session_id": "s1",
        "sessionId": "s1",
        "conversation_id": "s1",
        "agent_id": "a1",
        "tool_name": "run_shell_command",
        "toolName": "bash",
        "tool_input": {"command": "ls /nope"},
        "toolArgs": {"command": "ls /nope"},
        "tool_use_id": "t1",
        "tool_call_id": "t1",
        "tool_response": {"llmContent": "ls: cannot access", "error": {"message": "exit 2"}},
        "tool_result": {"result_type": "failure", "text_result_for_llm": "exit 2"},
        "tool_output": "ok",
        "error": "exit 2",
        "error_message": "exit 2",
        "prompt": "list the folder",
        "prompt_response": "done",
        "last_assistant_message": "done",
        "cwd": "/tmp",
        "workspace_roots": ["/tmp"],
        "trigger": "manual",
        "stop_hook_active": False,
        "agent_type": "general-purpose",
    }


def seeds() -> list[bytes]:
    """The agents' real payloads (tests/hook_samples) under their dialect, and for every
    dialect and event a payload with every key a dialect reads."""
    out: list[bytes] = []
    for index, name in enumerate(NAMES):
        folder = SAMPLES / name
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
            out.append(bytes([index]) + path.read_bytes())
        for event_name in sorted(DIALECTS[name].events):
            out.append(
                bytes([index]) + json.dumps(_kitchen_sink(DIALECTS[name], event_name)).encode()
            )
    out.append(bytes([0xF0]) + (SAMPLES / "claude" / "PreToolUse.json").read_bytes())
    return out


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--seed":
        import hashlib

        folder = Path(sys.argv[2])
        folder.mkdir(parents=True, exist_ok=True)
        for seed in seeds():
            (folder / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
        return
    if atheris is None:
        raise SystemExit("pip install atheris first (or run: python fuzz/mutate.py hooks)")
    atheris.Setup(sys.argv, target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
