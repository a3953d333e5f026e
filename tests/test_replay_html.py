"""`loopguard replay --format html`: one self-contained page, checked as written and as a real
browser renders it (headless Chromium: the DOM after the page's script ran, and a screenshot).

The browser test skips only when Chromium is not installed and LOOPGUARD_REQUIRE_BROWSER is
unset; CI sets it, so there it must run. The screenshot goes to $LOOPGUARD_ARTIFACTS (default:
the test's temporary directory).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from loopguard.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "transcripts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def write_report(tmp_path: Path, *extra: str) -> Path:
    page = tmp_path / "report.html"
    files = [
        str(EXAMPLES / "stuck-poll.anthropic.json"),
        str(EXAMPLES / "read-list-ping-pong.chat.jsonl"),
        str(EXAMPLES / "healthy-refactor.eventlog.jsonl"),
        *extra,
    ]
    code = main(
        [
            "replay",
            "--rules",
            str(EXAMPLES / "loop-detection.yaml"),
            "--format",
            "html",
            "-o",
            str(page),
            *files,
        ]
    )
    assert code == 0
    return page


def page_data(page: Path) -> dict:
    island = re.search(
        r'<script type="application/json" id="data">(.*?)</script>', page.read_text("utf-8"), re.S
    )
    assert island is not None
    return json.loads(island.group(1))


def test_the_page_is_self_contained_and_carries_every_session(tmp_path: Path) -> None:
    page = write_report(tmp_path)
    text = page.read_text("utf-8")
    assert not re.search(
        r'(?:src|href)\s*=\s*"(?:https?:)?//|@import|url\(', text
    )  # no network, no assets
    data = page_data(page)
    assert [s["session"] for s in data["sessions"]] == [
        str(EXAMPLES / "stuck-poll.anthropic.json"),
        "eval-017",
        "eval-018",
        "refactor-7f3a",
    ]
    for session in data["sessions"]:  # one cell per call, coloured by the worse of its two checks
        assert len(session["cells"]) == session["calls"]
        for action, count in session["actions"].items():
            assert sum(1 for c in session["cells"] if c["action"] == action) == count
    poll = data["sessions"][0]
    assert poll["cells"][-1]["after_breaker"] and poll["cells"][-1]["action"] == "breaker"
    assert poll["cells"][-1]["votes"][0]["evidence"]


def test_transcript_text_cannot_break_out_of_the_page(tmp_path: Path) -> None:
    evil = tmp_path / "evil.jsonl"
    evil.write_text(
        json.dumps(
            {
                "event": "assistant_message",
                "tool_calls": [
                    {
                        "id": "c1",
                        "name": "x</script><script>alert(1)</script>",
                        "arguments": {"a": "<!-- <script>"},
                    }
                ],
            }
        )
        + "\n"
    )
    page = write_report(tmp_path, str(evil))
    text = page.read_text("utf-8")
    assert "alert(1)" in text and "<script>alert" not in text
    assert (
        page_data(page)["sessions"][-1]["cells"][0]["tool"] == "x</script><script>alert(1)</script>"
    )


def _chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("LOOPGUARD_REQUIRE_BROWSER"),
    reason="chromium is not installed (set LOOPGUARD_REQUIRE_BROWSER=1 to make this an error)",
)
def test_the_page_renders_in_headless_chromium(tmp_path: Path) -> None:
    assert CHROMIUM is not None, "LOOPGUARD_REQUIRE_BROWSER is set but chromium is not installed"
    page = write_report(tmp_path)
    data = page_data(page)
    dom = _chromium("--dump-dom", page.as_uri(), profile=tmp_path / "profile").stdout
    assert 'data-rendered="4"' in dom  # the script ran to the end
    assert len(re.findall(r'<tr data-session="\d+">', dom)) == 4
    summary = data["summary"]
    assert f"4 sessions, {summary['turns']} turns, {summary['calls']} tool calls" in dom
    cells = re.findall(r'<span class="cell (allow|warn|critical|breaker|skipped)( after)?', dom)
    assert len(cells) == summary["calls"]
    for action in ("warn", "critical", "breaker"):
        assert sum(1 for kind, _ in cells if kind == action) == summary["actions"][action]
    assert any(
        after for kind, after in cells if kind == "breaker"
    )  # calls after a breaker are marked
    shown = re.search(
        r'<div class="detail">(.*?)</div>', dom, re.S
    )  # the first flagged call, opened
    first = next(c for s in data["sessions"] for c in s["cells"] if c["action"] != "allow")
    assert (
        shown is not None
        and f"vote {first['votes'][0]['detector']}: {first['votes'][0]['level']}" in shown.group(1)
    )
    assert "evidence: calls" in shown.group(1)
    assert 'title="' in dom and "arguments: " in dom  # hover text on every cell

    artifacts = Path(os.environ.get("LOOPGUARD_ARTIFACTS") or tmp_path)
    artifacts.mkdir(parents=True, exist_ok=True)
    shot = artifacts / "replay-report.png"
    _chromium(
        f"--screenshot={shot}",
        "--window-size=1280,1400",
        page.as_uri(),
        profile=tmp_path / "profile",
    )
    assert (
        shot.is_file()
        and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        and shot.stat().st_size > 10_000
    )
