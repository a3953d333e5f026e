"""Intent matching cost vs number of keywords: Aho-Corasick vs a naive substring loop.

For 30, 1,000 and 10,000 synthetic keywords (mixed Chinese and Latin, fixed seed) spread
over builtin:portfolio's seven keyword sets (the default rules have no intents), time
`TurnPolicy.expectation_for(messages)` (what `session.begin_turn` runs) on a 200-character
user message with a 4-message context.
The user text holds a follow-up phrase and the context no portfolio marker, so every intent
is evaluated and both the text and the context are scanned; no intent matches.

The naive baseline evaluates the same compiled intents, but computes each set's
"contains" answer with `any(k in text for k in keywords)` (keywords pre-normalised).
Both run in one process, interleaved, best of several repeats.

    python benchmarks/intent_bench.py          # full run
    python -c "import intent_bench; intent_bench.run(small=True)"   # quick
"""

from __future__ import annotations

import random
import time
from typing import Any

from loopguard.config.layers import load
from loopguard.policy.turns import KeywordIndex, TurnPolicy

SIZES = (30, 1_000, 10_000)
SETS = (
    "portfolio_view",
    "portfolio_diagnose",
    "followup",
    "analysis_hint",
    "referential",
    "affirmative",
    "portfolio_marker",
)
FOLLOWUP = "体检一下吧"
HAN = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]
LATIN = "abcdefghijklmnopqrstuvwxyz"


def _keyword(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return "".join(rng.choices(HAN, k=rng.randint(2, 5)))
    return "".join(rng.choices(LATIN, k=rng.randint(4, 9)))


def _text(rng: random.Random, length: int) -> str:
    pool = HAN[:1500] + list(LATIN + "      ")
    return "".join(rng.choices(pool, k=length))


def _config(count: int, rng: random.Random) -> dict[str, Any]:
    base = load("builtin:portfolio").data  # a fresh dict on every load
    keywords = [FOLLOWUP] + [_keyword(rng) for _ in range(count - 1)]
    sets: dict[str, list[str]] = {name: [] for name in SETS}
    for i, keyword in enumerate(keywords):
        sets["followup" if i == 0 else SETS[i % len(SETS)]].append(keyword)
    base["keyword_sets"] = {**base["keyword_sets"], **sets}
    base.pop("agents", None)
    return base


def _messages(rng: random.Random) -> list[dict[str, str]]:
    context = [
        {"role": role, "content": _text(rng, 200)}
        for role in ("user", "assistant", "user", "assistant")
    ]
    text = _text(rng, 100) + FOLLOWUP + _text(rng, 200 - 100 - len(FOLLOWUP))
    return [*context, {"role": "user", "content": text}]


class _NaiveProbe:
    """Same interface as loopguard.policy.turns.Probe, computed with a per-keyword loop."""

    def __init__(self, text: str, sets: list[tuple[int, list[str]]], index: KeywordIndex) -> None:
        norm = index.normalize(text)
        self.contains = 0
        for bit, keywords in sets:
            if any(k in norm for k in keywords):
                self.contains |= bit
        self.equals = index.equals_mask(norm)


def _naive(policy: TurnPolicy, sets: list[tuple[int, list[str]]], messages: list[Any]) -> Any:
    text = policy.user_text(messages)
    probe = _NaiveProbe(text, sets, policy.index)
    context = _NaiveProbe(policy.context_text(messages), sets, policy.index)
    for intent in policy.intents:
        if intent.when(probe, context):
            return intent.id
    return None


def _best(fn: Any, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def run(small: bool = False) -> list[dict[str, Any]]:
    """Time both matchers per size: one row per size, then the two goal rows."""
    rng = random.Random(20240611)
    repeats, number = (3, 20) if small else (7, 200)
    cases = []
    for size in SIZES:
        config = _config(size, rng)
        started = time.perf_counter()
        policy = TurnPolicy.from_config(config)
        compile_ms = (time.perf_counter() - started) * 1000
        norm = policy.index.normalize
        sets = [
            (policy.index.bits(name, "bench"), [norm(k) for k in kws if norm(k)])
            for name, kws in config["keyword_sets"].items()
        ]
        messages = _messages(rng)
        assert policy.expectation_for(messages) is None and _naive(policy, sets, messages) is None
        cases.append(
            {
                "size": size,
                "policy": policy,
                "sets": sets,
                "messages": messages,
                "compile_ms": compile_ms,
                "aho": float("inf"),
                "naive": float("inf"),
            }
        )
    for _ in range(repeats):  # interleaved: every repeat times every case with both matchers
        for case in cases:
            policy, sets, messages = case["policy"], case["sets"], case["messages"]
            aho = _best(lambda p=policy, m=messages: p.expectation_for(m), number)
            case["aho"] = min(case["aho"], aho)
            naive_number = max(1, number // (10 if case["size"] >= 10_000 else 1))
            naive = _best(lambda p=policy, s=sets, m=messages: _naive(p, s, m), naive_number)
            case["naive"] = min(case["naive"], naive)
    base = cases[0]["aho"]
    sizes = [
        {
            "keywords": c["size"],
            "aho_us": c["aho"] * 1e6,
            "naive_us": c["naive"] * 1e6,
            "speedup": c["naive"] / c["aho"],
            "vs_30": c["aho"] / base,
            "compile_ms": c["compile_ms"],
        }
        for c in cases
    ]
    return _rows(sizes)


def _rows(sizes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows in the shape of benchmarks/run.py (measure, ratio, budget, ok, note) plus details."""
    rows = [
        dict(
            s,
            measure=f"intent match, {s['keywords']:,} keywords (us per turn)",
            ratio=round(s["aho_us"], 1),
            budget=None,
            ok=None,
            note=f"naive loop {s['naive_us']:.1f} us ({s['speedup']:.1f}x slower), "
            f"compile {s['compile_ms']:.1f} ms",
        )
        for s in sizes
    ]
    last = sizes[-1]
    rows.append(
        {
            "measure": (
                f"intent match cost, {last['keywords']:,} vs {sizes[0]['keywords']} keywords"
            ),
            "ratio": round(last["vs_30"], 2),
            "budget": 2,
            "ok": last["vs_30"] < 2,
            "note": "must stay under the budget",
        }
    )
    rows.append(
        {
            "measure": f"intent match speedup over a naive loop, {last['keywords']:,} keywords",
            "ratio": round(last["speedup"], 1),
            "budget": 20,
            "ok": last["speedup"] >= 20,
            "note": "must reach at least the budget",
        }
    )
    return rows


def main() -> None:
    rows = run()
    print(
        f"{'keywords':>9} {'aho-corasick':>13} {'naive loop':>12} "
        f"{'speedup':>8} {'vs 30':>6} {'compile':>9}"
    )
    for r in rows[:-2]:
        print(
            f"{r['keywords']:>9,} {r['aho_us']:>10.1f} us {r['naive_us']:>9.1f} us "
            f"{r['speedup']:>7.1f}x {r['vs_30']:>5.2f}x {r['compile_ms']:>6.1f} ms"
        )
    for r in rows[-2:]:
        print(
            f"{r['measure']}: {r['ratio']}x (budget {r['budget']}x) -> "
            f"{'ok' if r['ok'] else 'MISSED'}"
        )


if __name__ == "__main__":
    main()
