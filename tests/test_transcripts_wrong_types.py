"""Readers tolerate fields of the wrong type (issue 22, item 9): skipped or warned, never a crash.

The OpenHands reader crashed on `"cause": [2]` (an unhashable list used as a key) and on
`"choices": 1.5` (iterated). Each value of the OpenHands sample is retyped here in turn (a
list, a float, an object); the reader must give events or an `InputError`, nothing else. The
same sweep over every other reader's samples (24,192 retyped files, 12 kinds of value) found
nothing more; it is too slow to run here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopguard.cli import main
from loopguard.errors import InputError
from loopguard.replay.transcripts.detect import open_transcript

SAMPLE = Path(__file__).parent / "agent_samples" / "openhands-trajectory.json"
RETYPED = ([2], 1.5, {"x": [1]})


def _instance(*events: dict[str, Any]) -> str:
    user = {"id": 1, "source": "user", "action": "message", "args": {"content": "go"}}
    return json.dumps({"instance_id": "x", "history": [user, *events]}) + "\n"


def _run(action_meta: dict[str, Any], action_id: Any = 2, cause: Any = 2) -> dict[str, Any]:
    action = {
        "id": action_id,
        "source": "agent",
        "action": "run",
        "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "t1"} | action_meta,
        "args": {"command": "ls"},
    }
    observation = {"id": 3, "source": "environment", "cause": cause, "observation": "run"}
    return {"action": action, "observation": observation | {"content": "ok", "extras": {}}}


CASES = {
    "cause-list": _run({}, cause=[2]),
    "cause-object": _run({}, cause={"id": 2}),
    "id-list": _run({}, action_id=[2]),
    "choices-float": _run({"model_response": {"choices": 1.5}}),
    "choices-text": _run({"model_response": {"choices": "abc"}}),
    "message-text": _run({"model_response": {"choices": [{"message": "hi"}]}}),
    "tool-calls-number": _run({"model_response": {"choices": [{"message": {"tool_calls": 7}}]}}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_wrongly_typed_openhands_field_is_no_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    case = CASES[name]
    path = tmp_path / "output.jsonl"
    path.write_text(_instance(case["action"], case["observation"]))
    code = main(["replay", "--color", "never", "--format", "json", str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert code == 0, err
    summary = json.loads(out.splitlines()[-1])
    assert summary["calls"] == 1  # the call itself is still read and checked
    answered = "was never answered" not in out
    assert answered == (not name.startswith(("cause", "id"))), out  # no id to match: unmatched


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if prefix:
        yield prefix
    if isinstance(value, (dict, list)):
        children = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in children:
            yield from _paths(child, (*prefix, key))


def _retyped(document: Any, path: tuple[Any, ...], new: Any) -> Any:
    copy = json.loads(json.dumps(document))
    spot = copy
    for key in path[:-1]:
        spot = spot[key]
    spot[path[-1]] = new
    return copy


def test_every_field_of_the_openhands_sample_retyped(tmp_path: Path) -> None:
    document = json.loads(SAMPLE.read_text())
    path = tmp_path / "t.json"
    crashes = []
    for spot in _paths(document):
        for new in RETYPED:
            path.write_text(json.dumps(_retyped(document, spot, new)))
            try:
                for _ in open_transcript(str(path), "openhands").events():
                    pass
            except InputError:
                pass
            except Exception as exc:  # noqa: BLE001 — what the test looks for
                crashes.append((spot, new, f"{type(exc).__name__}: {exc}"))
    assert crashes == []
