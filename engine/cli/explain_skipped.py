"""`loopguard explain` for a skipped required tool, and reading a decision id (`N`, `FILE#N`).

A skipped required tool is explained by what made the tool required: the
intent that matched the user's message, its condition as written in the
rules, the keyword that matched (and its set), and what the turn looked
like when the model answered without the call.
"""

from __future__ import annotations

import json
from typing import Any

from loopguard.cli.replay_output import short, where
from loopguard.replay.intents import intent_rule
from loopguard.replay.replayer import SkippedTool
from loopguard.replay.transcripts.source import STDIN, STDIN_NAME

MAX_DIGITS = 18  # a decision number is below 10**18 (a session's calls count in 63 bits)


def parse_id(wanted: str, files: list[str]) -> tuple[str | None, int] | str:
    """(file or None, number) of `N` or `FILE#N`; a message when it is not one."""
    file, sep, number = wanted.rpartition("#")
    # ASCII digits only ("²" is a digit to isdigit, not to int), and no more than a decision
    # number can have: int() of over 4,300 digits raised ValueError (a traceback)
    if not (number.isascii() and number.isdigit()) or len(number) > MAX_DIGITS:
        shown = repr(wanted) if len(wanted) <= 60 else repr(wanted[:60]) + "..."
        return (
            f"{shown} is not a decision: use N (a number from 1, at most {MAX_DIGITS} digits) "
            "or FILE#N, as `loopguard replay` shows them"
        )
    if int(number) < 1:
        return (
            f"{wanted!r} is not a decision: use N (a number from 1) or FILE#N, "
            "as `loopguard replay` shows them"
        )
    if sep and file not in files and not (file == STDIN_NAME and STDIN in files):
        return f"{file!r} is not one of the files given"
    if not sep and len(set(files)) > 1:
        return f"decision numbers count per file: with several files, name it FILE#{number}"
    return (file if sep else None), int(number)


def render_skipped(record: SkippedTool, config: Any) -> list[str]:
    rule = intent_rule(config, record.intent) or {}
    matched = (
        f"keyword {json.dumps(record.keyword, ensure_ascii=False)} of set {record.keyword_set} "
        "in the user's message"
        if record.keyword
        else "the condition held on the user's message and its context"
    )
    lines = [
        f"decision #{record.index} at {where(record.file, record.line)}: "
        f"SKIPPED REQUIRED TOOL {record.call}",
        f"  session {record.session}, turn {record.turn}",
        f"  intent: {record.intent} ({matched})",
        f"  condition: {json.dumps(rule.get('when'), ensure_ascii=False)}",
        f"  requires: {json.dumps(rule.get('require'), ensure_ascii=False)}",
        f"  why: {short(record.reason, 240)}",
        f"  user message: {short(record.user_text, 240)}",
        (
            f"  the model called {record.tool}, but never with the required arguments"
            if record.problem == "other_args"
            else f"  the model {record.problem.replace('_', ' ')}: "
            f"it answered without calling {record.tool}"
        ),
        f"  retries this turn: {record.retries} (turn.max_incomplete_tool_retries = "
        f"{json.dumps((config.get('turn') or {}).get('max_incomplete_tool_retries'))})",
    ]
    if record.retry and record.retry_message:
        lines.append(f"  a runtime would have sent: {short(record.retry_message, 240)}")
    else:
        lines.append("  retries were used up: the answer would carry an 'unreliable' warning")
    return lines
