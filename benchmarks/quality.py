"""Detection quality on labelled real transcripts.

    python benchmarks/quality.py CORPUS [--rules R] [--json OUT] [--list]

CORPUS is a folder with `labels.jsonl` (first line: the labelling protocol;
then one label per transcript) and the transcripts it names. Every labelled
transcript is replayed through a fresh guard and scored by its *first stop*
(the first tool call decided critical or breaker, before or after the call):

- a loop is *caught* when that stop lands in
  `[loop_first_index, intervene_index + 3]`, *early* before, *late* after,
  *missed* when nothing stops it;
- a healthy transcript with any stop is a *false stop*.

Printed: healthy runs stopped, loops caught, precision (caught loops divided by
transcripts stopped), warn rate on healthy runs, healthy runs ended by a
breaker, the median delay of the first stop after `intervene_index`, how often
a breaker follows the first stop of a caught loop within 3 calls (the
recording goes on as it was, so this is "the model ignored the block"), and
the same per source, per loop type and per deciding detector. `--list` prints
every transcript that was not scored right (miss, early, late, false stop) with
the deciding detector, so a person can read the transcript around it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import loopguard
from loopguard.replay.replayer import DecisionRecord, Replayer

STOPS = ("critical", "breaker")
SLACK = 3  # calls after intervene_index a stop may land and still count as caught


@dataclass
class Score:
    """One labelled transcript and what the guard did with it."""

    file: str
    session: str | None
    source: str
    label: str
    loop_type: str | None
    borderline: bool
    calls: int
    verdict: str  # caught | early | late | missed | false_stop | clean
    stop_index: int | None = None
    detector: str | None = None
    warned: bool = False
    delay: int | None = None  # stop_index - intervene_index, for caught and late loops
    first_index: int | None = None
    intervene_index: int | None = None
    breaker_index: int | None = None  # the first breaker (the stop itself, or a later escalation)


@dataclass
class Replayed:
    """Per session of one file: number of calls, first stop, whether anything warned."""

    calls: int = 0
    stop: tuple[int, str | None] | None = None
    breaker: int | None = None  # call index of the first breaker
    warned: bool = False
    seq_index: dict[int, int] = field(default_factory=dict)


def read_labels(corpus: Path) -> list[dict[str, Any]]:
    """Labels from `labels.jsonl`, skipping the protocol line."""
    labels = []
    with open(corpus / "labels.jsonl", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                item = json.loads(line)
                if "file" in item:
                    labels.append(item)
    return labels


def replay_file(guard: loopguard.Guard, path: Path) -> dict[str, Replayed]:
    """Replay one transcript file; per session: calls, first stop (call index, detector), warned."""
    out: dict[str, Replayed] = defaultdict(Replayed)
    for record in Replayer(guard).run([str(path)]):
        if not isinstance(record, DecisionRecord):
            continue
        live = out[record.session]
        decision = record.decision
        if decision.phase == "before":
            live.seq_index[decision.seq] = live.calls
            live.calls += 1
        index = live.seq_index.get(decision.seq, live.calls - 1)
        if decision.action in STOPS and live.stop is None:
            live.stop = (index, decision.detector)
        if decision.action == "breaker" and live.breaker is None:
            live.breaker = index
        elif decision.action == "warn":
            live.warned = True
    return out


def score(label: dict[str, Any], replayed: dict[str, Replayed]) -> Score:
    session = label.get("session")
    if session is not None:
        live = replayed.get(session, Replayed())
    else:
        live = next(iter(replayed.values()), Replayed())
    is_loop = label["label"] == "loop"
    result = Score(
        label["file"],
        session,
        label.get("source", "").removeprefix("realdata/"),
        label["label"],
        label.get("loop_type"),
        bool(label.get("borderline")),
        live.calls,
        "clean",
        warned=live.warned,
    )
    if live.stop is not None:
        result.stop_index, result.detector = live.stop
    result.breaker_index = live.breaker
    if not is_loop:
        result.verdict = "false_stop" if live.stop is not None else "clean"
        return result
    first, intervene = int(label["loop_first_index"]), int(label["intervene_index"])
    result.first_index, result.intervene_index = first, intervene
    if result.stop_index is None:
        result.verdict = "missed"
    elif result.stop_index < first:
        result.verdict = "early"
    elif result.stop_index <= intervene + SLACK:
        result.verdict = "caught"
    else:
        result.verdict = "late"
    if result.verdict in ("caught", "late"):
        result.delay = result.stop_index - intervene  # type: ignore[operator]
    return result


def measures(scores: Iterable[Score]) -> dict[str, Any]:
    """The headline measures over a group of scores."""
    scores = list(scores)
    loops = [s for s in scores if s.label == "loop"]
    healthy = [s for s in scores if s.label != "loop"]
    stopped = [s for s in scores if s.stop_index is not None]
    caught = [s for s in loops if s.verdict == "caught"]
    delays = [s.delay for s in loops if s.delay is not None]
    verdicts = Counter(s.verdict for s in loops)
    escalated = [
        s for s in caught if s.breaker_index is not None and s.breaker_index - s.stop_index <= SLACK
    ]  # type: ignore[operator]
    return {
        "transcripts": len(scores),
        "loops": len(loops),
        "healthy": len(healthy),
        "healthy_stopped": _share(sum(s.verdict == "false_stop" for s in healthy), len(healthy)),
        "loops_caught": _share(len(caught), len(loops)),
        "precision": _share(len(caught), len(stopped)),
        "healthy_warned": _share(sum(s.warned for s in healthy), len(healthy)),
        "healthy_ended": _share(sum(s.breaker_index is not None for s in healthy), len(healthy)),
        "median_delay": statistics.median(delays) if delays else None,
        "breaker_follows": _share(len(escalated), len(caught)),
        "early": verdicts["early"],
        "late": verdicts["late"],
        "missed": verdicts["missed"],
        "false_stops": sum(s.verdict == "false_stop" for s in healthy),
    }


def _share(part: int, whole: int) -> dict[str, Any]:
    return {"n": part, "of": whole, "pct": round(100.0 * part / whole, 1) if whole else None}


def _pct(share: dict[str, Any]) -> str:
    if share["pct"] is None:
        return "-"
    return f"{share['pct']:.1f} % ({share['n']}/{share['of']})"


def report(scores: list[Score]) -> dict[str, Any]:
    """Everything the command prints, as one JSON-able mapping."""
    by_source: dict[str, list[Score]] = defaultdict(list)
    by_type: dict[str, list[Score]] = defaultdict(list)
    by_detector: Counter[str] = Counter()
    by_detector_false: Counter[str] = Counter()
    for s in scores:
        by_source[s.source].append(s)
        if s.loop_type:
            by_type[s.loop_type].append(s)
        if s.detector is not None:
            if s.verdict == "caught":
                by_detector[s.detector] += 1
            elif s.verdict == "false_stop":
                by_detector_false[s.detector] += 1
    return {
        "all": measures(scores),
        "without_borderline": measures(s for s in scores if not s.borderline),
        "by_source": {k: measures(v) for k, v in sorted(by_source.items())},
        "by_loop_type": {k: measures(v) for k, v in sorted(by_type.items())},
        "by_detector": {
            d: {"caught": by_detector[d], "false_stops": by_detector_false[d]}
            for d in sorted(set(by_detector) | set(by_detector_false))
        },
        "transcripts": [asdict(s) for s in scores],
    }


def print_report(data: dict[str, Any], listing: bool) -> None:
    overall = data["all"]
    print(
        f"transcripts: {overall['transcripts']} "
        f"({overall['loops']} loops, {overall['healthy']} healthy)"
    )
    print()
    print("| measure | all | without borderline |")
    print("|---|---:|---:|")
    rows = (
        ("healthy runs stopped", "healthy_stopped"),
        ("loops caught", "loops_caught"),
        ("precision", "precision"),
        ("healthy runs warned", "healthy_warned"),
        ("healthy runs ended by a breaker", "healthy_ended"),
    )
    for title, key in rows:
        print(f"| {title} | {_pct(overall[key])} | {_pct(data['without_borderline'][key])} |")
    print(
        f"| median delay after intervene_index (calls) | {overall['median_delay']} | "
        f"{data['without_borderline']['median_delay']} |"
    )
    print(
        f"| caught loops where a breaker follows the first stop within {SLACK} calls | "
        f"{_pct(overall['breaker_follows'])} | "
        f"{_pct(data['without_borderline']['breaker_follows'])} |"
    )
    print(
        f"| loops early / late / missed | "
        f"{overall['early']} / {overall['late']} / {overall['missed']} | "
        f"{data['without_borderline']['early']} / {data['without_borderline']['late']} / "
        f"{data['without_borderline']['missed']} |"
    )
    print()
    print("| source | transcripts | healthy stopped | loops caught | precision |")
    print("|---|---:|---:|---:|---:|")
    for name, m in data["by_source"].items():
        print(
            f"| {name} | {m['transcripts']} | {_pct(m['healthy_stopped'])} | "
            f"{_pct(m['loops_caught'])} | "
            f"{_pct(m['precision'])} |"
        )
    print()
    print("| loop type | loops | caught | early | late | missed |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, m in data["by_loop_type"].items():
        print(
            f"| {name} | {m['loops']} | {_pct(m['loops_caught'])} | "
            f"{m['early']} | {m['late']} | {m['missed']} |"
        )
    print()
    print("| deciding detector | loops caught | false stops |")
    print("|---|---:|---:|")
    for name, m in data["by_detector"].items():
        print(f"| {name} | {m['caught']} | {m['false_stops']} |")
    if listing:
        print()
        for s in data["transcripts"]:
            if s["verdict"] in ("caught", "clean"):
                continue
            where = f"{s['file']}" + (f" [{s['session']}]" if s["session"] else "")
            span = (
                ""
                if s["first_index"] is None
                else f" loop {s['first_index']}..{s['intervene_index']}"
            )
            print(
                f"{s['verdict']:<10} {where} stop={s['stop_index']} by {s['detector']}{span} "
                f"({s['loop_type'] or s['label']})"
            )


def run(corpus: Path, rules: str | None) -> list[Score]:
    """Score every labelled transcript of `corpus` under `rules` (default: builtin:default)."""
    labels = read_labels(corpus)
    cache: dict[str, dict[str, Replayed]] = {}
    scores = []
    for label in labels:
        name = label["file"]
        if name not in cache:
            guard = loopguard.Guard.from_file(rules) if rules else loopguard.Guard.default()
            cache[name] = replay_file(guard, corpus / name)
        scores.append(score(label, cache[name]))
    return scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="folder with labels.jsonl and the transcripts")
    parser.add_argument("--rules", help="rules file (default: the bundled default rules)")
    parser.add_argument("--json", dest="json_out", help="also write the full report as JSON here")
    parser.add_argument(
        "--list", action="store_true", help="list every transcript not scored right"
    )
    args = parser.parse_args(argv)
    if not (args.corpus / "labels.jsonl").is_file():
        print(f"quality.py: {args.corpus}: no labels.jsonl in this folder", file=sys.stderr)
        return 2
    try:
        scores = run(args.corpus, args.rules)
    except loopguard.RulesError as exc:
        print(f"quality.py: {exc}", file=sys.stderr)
        return 2
    data = report(scores)
    print_report(data, args.list)
    if args.json_out:
        Path(args.json_out).write_text(
            json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
