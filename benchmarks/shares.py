"""What each detector adds to a call: `python benchmarks/shares.py [--small]`.

For every standard trace, the engine with every detector off, then the engine with one
detector on at a time (its options as the rules give them), each as a ratio to the floor
measured in the same run like `run.py`'s per-call rows; a detector's share is its row minus
the engine's. Separate from `run.py`, whose full run stays a few minutes: this one takes
about as long again.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import best_by_chunk, floor  # noqa: E402
from run import chunk_of, detector_ids, drive_from, only  # noqa: E402
from traces import NAMES, load  # noqa: E402


def shares(scale: float, repeats: int) -> list[tuple[str, str, float]]:
    """(trace, "engine" or a detector id, × floor) rows, as measured."""
    subjects = [("engine", None), *((i, i) for i in detector_ids())]
    counter = itertools.count()
    rows = []
    for name in NAMES:
        trace = load(name, scale)
        for label, on in subjects:
            guard = only(on)
            base, subj = best_by_chunk(
                trace,
                chunk_of(name),
                repeats,
                floor,
                lambda g=guard: partial(drive_from, g.session(f"s{next(counter)}")),
            )
            rows.append((name, label, subj / base))
            print(f"{name:10} {label:24} {subj / base:6.2f}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="tiny inputs (smoke test)")
    args = parser.parse_args(argv)
    rows = shares(*((0.02, 2) if args.small else (1.0, 5)))
    engine = {name: ratio for name, label, ratio in rows if label == "engine"}
    print("\nshare of each detector above the engine alone (× floor):")
    for name, label, ratio in rows:
        if label != "engine":
            print(f"{name:10} {label:24} {ratio - engine[name]:+6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
