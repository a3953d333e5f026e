"""A worker process for the shared-store tests: `python store_worker.py SPEC.json`.

SPEC: {"store": {"url"|"path": ...}, "rules": {...}, "sessions": [...], "calls": N,
"seed": S, "log": PATH, "go": PATH|null, "start": K}. It waits for the `go` file (so
workers start together), then makes N calls on sessions drawn from `sessions`, and writes
one JSON line per method that changed the store: the session, the token it replaced and
the one it wrote (the store's own order of writes), the method, its arguments and result.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from typing import Any

import loopguard
from loopguard.stores import store_from_config

TOOLS = ["read", "list", "write", "serach"]


def workload(rng: random.Random, n: int) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """A call likely to loop: few tools and arguments, results that often repeat."""
    tool = rng.choice(TOOLS)
    args = {"path": f"/src/f{rng.randint(0, 2)}.py"}
    if tool == "write":
        args["text"] = "x" * 40 + str(rng.randint(0, 1))
    if tool == "serach":
        return tool, args, {"error": "Unknown tool: serach"}
    if rng.random() < 0.15:
        return tool, args, {"error": f"line {rng.randint(1, 999)}: failed"}
    return tool, args, {"result": f"content {rng.randint(0, 1)}"}


def main(spec_path: str) -> int:
    spec = json.loads(open(spec_path).read())
    store = store_from_config(spec["store"])
    guard = loopguard.Guard.from_dict(spec["rules"], store=store)
    rng = random.Random(spec["seed"])
    go = spec.get("go")
    while go and not os.path.exists(go):
        time.sleep(0.005)
    with open(spec["log"], "a", buffering=1) as log:

        def note(sid: str, op: str, data: dict[str, Any], decision: Any) -> None:
            key, old, new = store.last_write or ("", 0, 0)
            store.last_write = None
            if key != sid:
                raise SystemExit(f"{op} on {sid} was not written: {decision!r}")
            log.write(
                json.dumps(
                    {
                        "sid": sid,
                        "old": old,
                        "new": new,
                        "op": op,
                        **data,
                        "decision": None if decision is None else decision.to_dict(),
                    }
                )
                + "\n"
            )

        for n in range(spec.get("start", 0), spec.get("start", 0) + spec["calls"]):
            sid = rng.choice(spec["sessions"])
            session = guard.session(sid)
            if rng.random() < 0.05:
                session.begin_turn([{"role": "user", "content": "go on"}])
                note(sid, "turn", {}, None)
            tool, args, outcome = workload(rng, n)
            cid = f"{spec['seed']}-{n}"
            before = session.before_call(tool, args, call_id=cid)
            note(sid, "before", {"tool": tool, "args": args, "cid": cid}, before)
            if not before.blocked:
                after = session.after_call(tool, args, call_id=cid, **outcome)
                note(sid, "after", {"tool": tool, "args": args, "cid": cid, **outcome}, after)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
