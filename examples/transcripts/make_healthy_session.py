"""Regenerates healthy-refactor.eventlog.jsonl: a long, varied, loop-free agent session.

Run from the repository root: python examples/transcripts/make_healthy_session.py
The output is deterministic (a fixed random seed), so the file only changes
when this script does.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).with_name("healthy-refactor.eventlog.jsonl")
MODULES = [
    f"src/shop/{area}/{name}.py"
    for area in ("cart", "orders", "billing", "catalog", "users", "search")
    for name in (
        "models",
        "views",
        "service",
        "repository",
        "schemas",
        "errors",
        "utils",
        "events",
        "tasks",
        "permissions",
    )
]
REQUESTS = [
    "Rename `total_price` to `total_amount` across the {area} module.",
    "Add type hints to the {area} service layer.",
    "Why does the {area} test suite print a deprecation warning?",
    "Move the {area} validation helpers into their own module.",
    "Add logging to the {area} repository functions.",
    "Check that every {area} view has a permission check.",
]


def call(
    rng: random.Random, turn: int, index: int, area: str, used: set[str]
) -> tuple[str, dict, object]:
    """One varied tool call with a plausible result; never the same call twice in a turn."""
    while True:
        kind = rng.choice(
            ["read_file", "read_file", "grep", "edit_file", "list_dir", "run_tests", "git_diff"]
        )
        path = rng.choice(
            [m for m in MODULES if f"/{area}/" in m] if rng.random() < 0.7 else MODULES
        )
        if kind == "read_file":
            args = {"path": path, "start_line": rng.randint(1, 40) * 10}
            result = (
                f"{path} lines {args['start_line']}-{args['start_line'] + 60}: "
                f"def {area}_{index}(...): ..."
            )
        elif kind == "grep":
            args = {
                "pattern": rng.choice(
                    ["total_price", "logger", "TODO", "def ", "import ", "raise "]
                )
                + rng.choice(["", "(", " =", ":"]),
                "path": path.rsplit("/", 1)[0],
            }
            result = {"matches": rng.randint(0, 9), "files": rng.randint(0, 4)}
        elif kind == "edit_file":
            word = rng.choice(
                ["amount", "customer", "invoice", "sku", "coupon", "address", "refund", "discount"]
            )
            args = {
                "path": path,
                "old": f"{word}_{turn}_{index} = compute_{word}(order_{index})",
                "new": (
                    f"{word}_{turn}_{index}: Decimal = compute_{word}(order_{index}, strict=True)"
                ),
            }
            result = {"ok": True, "replacements": 1, "timestamp": f"2025-05-14T10:{index:02d}:00Z"}
        elif kind == "list_dir":
            args = {"path": path.rsplit("/", 1)[0], "depth": rng.randint(1, 2)}
            result = "\n".join(sorted(rng.sample([m.rsplit("/", 1)[1] for m in MODULES[:10]], 5)))
        elif kind == "run_tests":
            args = {
                "path": f"tests/{area}/",
                "keyword": f"{rng.choice(['unit', 'api', 'smoke'])}_{index}",
            }
            result = f"{rng.randint(5, 60)} passed in {rng.randint(1, 9)}.{rng.randint(0, 99):02d}s"
        else:
            args = {"path": path, "staged": rng.random() < 0.5}
            result = f"diff --git a/{path} b/{path}\n@@ -{index} +{index} @@"
        key = kind + json.dumps(args, sort_keys=True)
        if key not in used:
            used.add(key)
            return kind, args, result


def main() -> None:
    rng = random.Random(20250514)
    rows: list[dict] = [
        {
            "event": "system_message",
            "session_id": "refactor-7f3a",
            "text": "You are a careful coding agent working in the shop repository.",
        }
    ]
    count = 0
    for turn in range(1, 41):
        area = rng.choice(["cart", "orders", "billing", "catalog", "users", "search"])
        base = {"session_id": "refactor-7f3a", "run_id": f"run-{(turn - 1) // 10 + 1}"}
        rows.append(
            {**base, "event": "user_message", "text": rng.choice(REQUESTS).format(area=area)}
        )
        used: set[str] = set()
        for index in range(rng.randint(4, 12)):
            count += 1
            kind, args, result = call(rng, turn, index, area, used)
            cid = f"call_{count:04d}"
            rows.append(
                {
                    **base,
                    "event": "assistant_message",
                    "text": "",
                    "tool_calls": [{"id": cid, "name": kind, "arguments": args}],
                }
            )
            rows.append(
                {**base, "event": "tool_result", "call_id": cid, "name": kind, "content": result}
            )
        rows.append(
            {
                **base,
                "event": "assistant_message",
                "text": f"Done with the {area} change for turn {turn}.",
            }
        )
    OUT.write_text("".join(json.dumps(row) + "\n" for row in rows))
    print(f"wrote {OUT} ({count} calls)")


if __name__ == "__main__":
    main()
