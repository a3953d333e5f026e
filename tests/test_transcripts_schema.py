"""The event log's JSON Schema accepts what the reader accepts and rejects malformed events."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

EXAMPLE = (
    Path(__file__).resolve().parent.parent
    / "examples"
    / "transcripts"
    / "healthy-refactor.eventlog.jsonl"
)


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(
        resources.files("loopguard.schemas").joinpath("events.schema.json").read_text()
    )
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_example_event_log_is_valid(validator: jsonschema.Draft202012Validator) -> None:
    for line in EXAMPLE.read_text().splitlines():
        assert not list(validator.iter_errors(json.loads(line))), line


@pytest.mark.parametrize(
    "event",
    [
        {"event": "user_message", "text": "hi"},
        {
            "event": "assistant_message",
            "tool_calls": [{"id": "c1", "name": "read", "arguments": "{bad json"}],
        },
        {
            "event": "tool_result",
            "call_id": "c1",
            "content": {"any": ["json"]},
            "is_error": True,
            "run_id": None,
        },
        {"event": "compaction", "session_id": 7},
        {"event": "session_end", "session_id": "s", "ts": 1715.5},
    ],
)
def test_valid_events(validator: jsonschema.Draft202012Validator, event: dict) -> None:
    assert not list(validator.iter_errors(event))


@pytest.mark.parametrize(
    "event",
    [
        {"text": "no event"},
        {"event": "user"},
        {"event": "user_message"},
        {"event": "assistant_message", "tool_calls": [{"name": "read"}]},
        {"event": "tool_result", "content": "no call id"},
        {"event": "tool_result", "call_id": "c", "is_error": "yes"},
    ],
)
def test_invalid_events(validator: jsonschema.Draft202012Validator, event: dict) -> None:
    assert list(validator.iter_errors(event))
