"""`loopguard explain FILE... --decision N` (also `loopguard replay FILE... --explain N`).

Replays the files exactly as `loopguard replay` does, stops at decision #N of
its report, and shows why: every vote, the history entries the detectors
looked at (the deciding vote's evidence is starred), and the thresholds from
the effective rules. `--format json` prints the same as one JSON object.
Lint errors of the rules file go to stderr first (the explanation still shows).
Exit codes: 0 shown, 2 no such decision or unreadable input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any

from loopguard.cli.colour import paint_report, painted
from loopguard.cli.explain_skipped import parse_id, render_skipped
from loopguard.cli.helptext import ParagraphFormatter, after_first_paragraph
from loopguard.cli.replay_files import once_each
from loopguard.cli.replay_inputs import add_common, load_guard
from loopguard.cli.replay_output import short, where
from loopguard.cli.rules_errors import report_rules_errors
from loopguard.detection.plugins import load_registry
from loopguard.findings import Finding
from loopguard.replay.intents import intent_rule
from loopguard.replay.replayer import DecisionRecord, Replayer, SkippedTool
from loopguard.state.history import FAILED, UNREAD, VETO
from loopguard.text.terminal import output

_UNSET_NOTE = "  (unset: a rolling detector runs only when its own enabled is true)"


def _declared(detector_id: str) -> list[str] | None:
    """The rules values a registered detector declares for `explain` (None: not registered)."""
    entry = load_registry().get(detector_id)
    return None if entry is None else list(entry.detector.explain_paths())


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="show why loopguard made one decision of a replay",
        description="Replay FILEs and explain decision #N of the replay report: its votes, "
        "the history entries that led to it, and the thresholds involved.",
        epilog=after_first_paragraph(__doc__),
        formatter_class=ParagraphFormatter,
    )
    add_common(parser)
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text (default), or json: one object with the decision, history and thresholds",
    )
    parser.add_argument(
        "--decision",
        "-d",
        required=True,
        metavar="N",
        help="the decision shown by `loopguard replay` as #N in FILE: N, or FILE#N when "
        "several files are replayed (skipped required tools are numbered with them)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    args.files = once_each(args.files, "loopguard explain")
    return explain(args, args.decision)


def explain(args: argparse.Namespace, wanted: str) -> int:
    """Replay until decision `wanted` (N or FILE#N) and explain it; 2 when it does not exist."""
    target = parse_id(wanted, args.files)
    if isinstance(target, str):
        print(f"loopguard explain: {target}", file=sys.stderr)
        return 2
    file, number = target
    guard = load_guard(args.rules, args.agent, args.allow_extends_outside)
    if guard is None:
        return 2
    report_rules_errors(args.rules, args.agent, args.allow_extends_outside)
    replayer = Replayer(
        guard, args.agent, track_calls=True, join_sessions=getattr(args, "join_sessions", False)
    )
    failed = False
    for record in replayer.run(args.files, args.input_format):
        if isinstance(record, Finding) and record.level == "error":
            print(record.format_text(), file=sys.stderr)
            failed = True
        elif (
            isinstance(record, (DecisionRecord, SkippedTool))
            and record.index == number
            and (file is None or record.file == file)
        ):
            session = replayer.live_session(record.key)
            if getattr(args, "format", "text") == "json":  # `replay --explain N --format json` too
                print(
                    json.dumps(
                        to_json(record, session.history(), session.config, replayer),
                        ensure_ascii=False,
                        indent=2,
                        default=str,
                    ),
                    file=output(sys.stdout, "json"),
                )
            else:
                lines = (
                    render_skipped(record, session.config)
                    if isinstance(record, SkippedTool)
                    else render(record, session.history(), session.config, replayer)
                )
                out = painted(sys.stdout, getattr(args, "color", "auto"), paint_report)
                out = output(out)  # terminal controls from the transcript escaped
                print("\n".join(lines), file=out)
                out.flush()
            return 0
    if not failed:
        name = f"#{number}" if file is None else f"{file}#{number}"
        print(
            f"loopguard explain: there is no decision {name}; the replay reported "
            f"{replayer.reported} (run `loopguard replay` to list them)",
            file=sys.stderr,
        )
    return 2


def lookup(config: Any, dotted: str) -> Any:
    """The value at a dotted path of the rules dict, or None when unset."""
    value = config
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def value(config: Any, dotted: str) -> Any:
    """`lookup`, or for a detector's own option the default of its options schema (a plugin's
    defaults are not in the rules dict unless the rules file writes them)."""
    found = lookup(config, dotted)
    parts = dotted.split(".")
    if found is None and len(parts) == 3 and parts[0] == "detectors":
        entry = load_registry().get(parts[1])
        found = None if entry is None else entry.detector.option_defaults().get(parts[2])
    return found


def threshold_paths(decision: Any, config: Any) -> list[str]:
    """Dotted paths of the rules values behind a decision (its detectors', the aggregator's)."""
    detectors = [v.detector for v in decision.votes] or (
        [decision.detector] if decision.detector else []
    )
    paths: list[str] = []
    for detector in detectors:
        known = _declared(detector)
        if known is None:
            options = lookup(config, f"detectors.{detector}") or {}
            known = [f"detectors.{detector}.{key}" for key in options]
        paths.extend(p for p in known if p not in paths)
    if decision.escalated or decision.action == "critical":
        paths.append("aggregator.escalate_criticals")
    if decision.action == "warn":
        paths.append("aggregator.warn_every")
    return paths


def thresholds(decision: Any, config: Any) -> list[str]:
    """The text lines `path = value` of `threshold_paths` (unset values shown as null)."""
    return [
        f"  {path} = {json.dumps(value(config, path), ensure_ascii=False)}"
        + (_UNSET_NOTE if path == "loop_detection.enabled" and lookup(config, path) is None else "")
        for path in threshold_paths(decision, config)
    ]


def verdict(entry: Any) -> str:
    """What a history entry's outcome meant to the detectors: `ok`, `failed`, `unread` (a
    first call's result, read only if the call comes round again), `veto` or `pending`.

    The outcome digest's own prefix says only how the result arrived (`ok:` a result text,
    `error:` a raised error); a result text can still be a failure (`outcomes`)."""
    outcome = entry.outcome
    if outcome is None:
        return "pending"
    if outcome == VETO:
        return "veto"
    if entry.flags & FAILED or entry.failed:
        return "failed"
    if entry.flags & UNREAD:
        return "unread"
    return "ok"


def outcome_label(entry: Any) -> str:
    """The outcome cell of the history table: `failed:1a2b3c4d`, `ok:…`, `unread:…`, `veto`…"""
    kind = verdict(entry)
    if kind in ("veto", "pending"):
        return kind
    return f"{kind}:{entry.outcome[-16:].hex()[:8]}"


def history_rows(
    record: DecisionRecord | SkippedTool, history: list[Any], replayer: Replayer
) -> list[dict[str, Any]]:
    """The history entries as dicts, each with its mark (`this`, `evidence`, null) and spot."""
    d = record.decision if isinstance(record, DecisionRecord) else None
    evidence = set(d.top.evidence) if d is not None and d.top else set()
    rows = []
    for entry in history:
        row = entry.to_dict()
        row["verdict"] = verdict(entry)
        row["mark"] = (
            "this"
            if d is not None and entry.seq == d.seq
            else "evidence"
            if entry.seq in evidence
            else None
        )
        position = replayer.position(record.key, entry.seq)
        row["file"], row["line"], row["args"] = position if position else (None, None, None)
        rows.append(row)
    return rows


def to_json(
    record: DecisionRecord | SkippedTool, history: list[Any], config: Any, replayer: Replayer
) -> dict[str, Any]:
    """`explain --format json`: the record's `to_dict()`, the history rows and the thresholds."""
    if isinstance(record, SkippedTool):
        rule = intent_rule(config, record.intent) or {}
        values = {
            "turn.max_incomplete_tool_retries": lookup(config, "turn.max_incomplete_tool_retries")
        }
        extra: dict[str, Any] = {
            "intent": {
                "id": record.intent,
                "when": rule.get("when"),
                "require": rule.get("require"),
            }
        }
    else:
        values = {path: value(config, path) for path in threshold_paths(record.decision, config)}
        extra = {}
    return {
        "decision": record.to_dict(),
        **extra,
        "history": history_rows(record, history, replayer),
        "thresholds": values,
    }


def render(
    record: DecisionRecord, history: list[Any], config: Any, replayer: Replayer
) -> list[str]:
    d = record.decision
    lines = [
        f"decision #{record.index} at {where(record.file, record.line)}",
        f"  session {record.session}, turn {d.turn}, call {d.seq}"
        + (f" (id {d.call_id})" if d.call_id else "")
        + f", checked {'on its result' if d.phase == 'after' else 'before it ran'}",
        f"  call: {d.tool}({short(_args(record.args), 120)})",
        f"  action: {d.action.upper()}, decided by {d.detector}"
        + (" (escalated: a repeated critical)" if d.escalated else ""),
    ]
    if d.message:
        lines.append(f"  the model would have been told: {short(d.message, 240)}")
    if record.after_breaker:
        lines.append(
            "  note: a breaker had already closed the tools in this turn; "
            "the recorded agent kept calling"
        )
    lines += ["", "votes:"]
    for vote in d.votes:
        lines.append(
            f"  {vote.detector}: {vote.level}, count {vote.count}"
            + (f", code {vote.code}" if vote.code else "")
        )
        lines.append(f"    {short(vote.message, 240)}")
        if vote.evidence:
            lines.append("    evidence: calls " + ", ".join(str(seq) for seq in vote.evidence))
    evidence = set(d.top.evidence) if d.top else set()
    lines += [
        "",
        "history at that moment (oldest first; * = evidence of the deciding vote, > = this call):",
        "    call  turn  tool                  outcome          where",
    ]
    for entry in history:
        mark = ">" if entry.seq == d.seq else ("*" if entry.seq in evidence else " ")
        outcome = outcome_label(entry)
        position = replayer.position(record.key, entry.seq)
        place = (
            f"{where(position[0], position[1])}  {short(_args(position[2]), 60)}"
            if position
            else ""
        )
        lines.append(
            f"  {mark} {entry.seq:<5} {entry.turn:<5} {short(entry.tool, 20):<21} "
            f"{outcome:<16} {place}"
        )
    if not history:
        lines.append("    (empty)")
    lines += ["", "thresholds involved (from the effective rules):", *thresholds(d, config)]
    return lines


def _args(args: Any) -> str:
    if isinstance(args, str):
        return args
    try:
        return json.dumps(args, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(args)
