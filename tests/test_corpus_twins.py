"""Every transcript in the shared corpus's `originals/`, read in the format its agent wrote,
gives the same calls, in the same order and grouping, with the same results, as its converted
twin (read with a generic reader).

The corpus is found beside the repository (`../shared/corpus` from its root), or where
LOOPGUARD_CORPUS says. Where it is missing the tests skip, unless LOOPGUARD_REQUIRE_CORPUS is
set (as .ci/run does): then they fail, so CI never passes by skipping them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from loopguard.replay.transcripts import AssistantMessage, ToolResult, open_transcript

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("LOOPGUARD_CORPUS") or ROOT.parent / "shared" / "corpus")
ORIGINALS = CORPUS / "originals"
REQUIRED = os.environ.get("LOOPGUARD_REQUIRE_CORPUS", "") not in ("", "0")
TWIN_FOLDERS = {
    "claude_code": ".anthropic.json",
    "swe_agent": ".chat.json",
    "swe_agent_msb_java": ".chat.json",
    "gemini": ".chat.json",
}


@pytest.fixture(autouse=True)
def _corpus_present() -> None:
    """Skip where the corpus is missing; fail instead when it is required."""
    if ORIGINALS.is_dir():
        return
    if REQUIRED:
        pytest.fail(
            f"LOOPGUARD_REQUIRE_CORPUS is set but the corpus is not at {CORPUS} "
            "(expected ../shared/corpus beside the repository, or set LOOPGUARD_CORPUS)"
        )
    pytest.skip(f"the shared corpus is not at {CORPUS} (set LOOPGUARD_CORPUS)")


def test_the_corpus_has_its_originals_and_labels() -> None:
    assert (CORPUS / "labels.jsonl").is_file()
    assert any(ORIGINALS.glob("*/*"))


def _norm(value: Any) -> Any:
    """A result as comparable JSON: JSON text parsed, so `{"a": 1}` and '{"a": 1}' agree."""
    if isinstance(value, str):
        try:
            return _norm(json.loads(value))
        except ValueError:
            return value.rstrip()
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def rounds(path: Path, errors: bool = True) -> dict[str, list[list[tuple[str, str, Any, bool]]]]:
    """Per session: the calls of each model response, each with its result, in file order.

    `errors=False` leaves out the failed-call flag (Chat twins cannot carry it).
    """
    sessions: dict[str, list[list[tuple[str, str, Any, bool]]]] = {}
    results: dict[tuple[str, str], ToolResult] = {}
    calls: list[tuple[str, list[Any]]] = []
    for event in open_transcript(str(path)).events():
        if isinstance(event, AssistantMessage) and event.tool_calls:
            calls.append((event.session, list(event.tool_calls)))
        elif isinstance(event, ToolResult):
            results.setdefault((event.session, event.call_id), event)
    for session, batch in calls:
        row = []
        for call in batch:
            result = results.get((session, call.id))
            row.append(
                (
                    call.name,
                    json.dumps(call.arguments, sort_keys=True, ensure_ascii=False),
                    _norm(result.content) if result else None,
                    errors and bool(result and result.is_error),
                )
            )
        sessions.setdefault(session, []).append(row)
    return sessions


def _twin(original: Path) -> Path:
    folder = original.parent.name
    stem = (
        original.name.split(".traj")[0]
        if folder.startswith("swe_agent")
        else original.name.rsplit(".", 1)[0]
    )
    return CORPUS / folder / (stem + TWIN_FOLDERS[folder])


def _cases() -> list[Path]:
    if not ORIGINALS.is_dir():
        return []
    return sorted(p for p in ORIGINALS.glob("*/*") if p.parent.name in TWIN_FOLDERS)


@pytest.mark.parametrize("original", _cases(), ids=lambda p: f"{p.parent.name}/{p.name[:60]}")
def test_original_reads_like_its_twin(original: Path) -> None:
    errors = (
        original.parent.name == "claude_code"
    )  # the Anthropic twin keeps is_error; Chat twins cannot
    mine, twin = rounds(original, errors), rounds(_twin(original), errors)
    assert list(mine.values()) == list(twin.values())
    assert sum(len(batch) for runs in mine.values() for batch in runs) > 0


def test_tau_bench_results_read_like_their_jsonl_twin() -> None:
    mine = rounds(ORIGINALS / "tau_bench" / "gpt-4o-airline.sample.json", errors=False)
    twin = rounds(CORPUS / "tau_bench" / "gpt-4o-airline.chat.jsonl", errors=False)
    by_run = {name.rsplit("-reward", 1)[0]: runs for name, runs in twin.items()}
    assert len(mine) == 12
    for name, runs in mine.items():
        assert runs == by_run[name], name


def call_batches(path: Path, fmt: str | None) -> list[list[tuple[str, Any]]]:
    """The tool calls of each assistant message that has any, as (name, arguments)."""
    return [
        [(c.name, c.arguments) for c in e.tool_calls]
        for e in open_transcript(str(path), fmt).events()
        if isinstance(e, AssistantMessage) and e.tool_calls
    ]


@pytest.mark.slow
def test_mini_swe_agent_files_give_the_calls_the_chat_reader_gives() -> None:
    """mini-swe-agent v2 files were readable as Chat (with warnings): the same calls and batches."""
    for path in sorted((CORPUS / "mini_swe_agent_v2").glob("*.json")):
        detected = call_batches(path, None)
        assert detected == call_batches(path, "openai-chat") and detected, path


def test_every_original_is_detected_without_help() -> None:
    expected = {
        "claude_code": "claude-code",
        "swe_agent": "swe-agent",
        "swe_agent_msb_java": "swe-agent",
        "gemini": "gemini",
        "tau_bench": "tau-bench",
    }
    for path in ORIGINALS.glob("*/*"):
        assert open_transcript(str(path)).format == expected[path.parent.name], path
    for path in (CORPUS / "mini_swe_agent_v2").glob("*.json"):
        assert open_transcript(str(path)).format == "mini-swe-agent", path
