"""A hook command that records what the agent sends it: one JSON line per run in the file
named by argv[1] (argv[2] is the configured event label; argv[3], if given, is seconds to sleep
before answering, to see whether the agent runs hooks at the same time), with the stdin event,
argv, the working directory, the hook-relevant environment and the times; prints `{}`."""

from __future__ import annotations

import json
import os
import sys
import time

KEEP_PREFIXES = ("CODEX", "GEMINI", "CLAUDE", "XDG_")
KEEP = ("HOME", "PWD", "PATH")


def main() -> None:
    started = time.time()
    raw = sys.stdin.read()
    try:
        event = json.loads(raw)
    except ValueError:
        event = None
    env = {k: v for k, v in os.environ.items() if k.startswith(KEEP_PREFIXES) or k in KEEP}
    record = {
        "label": sys.argv[2] if len(sys.argv) > 2 else None,
        "argv": sys.argv[1:],
        "cwd": os.getcwd(),
        "env": env,
        "env_names": sorted(os.environ),
        "stdin": event if event is not None else raw,
        "started": started,
        "pid": os.getpid(),
    }
    delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    if delay:
        time.sleep(delay)
    record["ended"] = time.time()
    with open(sys.argv[1], "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")
    print("{}")


if __name__ == "__main__":
    main()
