"""A small deterministic fuzzer: the suite's short run of every target, and longer runs
without atheris.

    python fuzz/mutate.py state  --runs 200000 --seed 7     # the state codec
    python fuzz/mutate.py hooks  --runs 200000              # the hook event reader
    python fuzz/mutate.py rules  --runs 20000               # the rules parsers and loader
    python fuzz/mutate.py transcripts --runs 5000           # the transcript readers (replay)

Each target module (`<name>_target.py` beside this file) has `target(data: bytes)`, which
raises only when the property it checks fails, and `seeds()`, a list of byte strings. From
the seeds, `run` derives inputs with a fixed `random.Random(seed)`: the same seed gives the
same inputs, in the same order, on every machine. Mutations are byte-level (flips, inserts,
deletions, repeats, splices, tokens JSON and loopguard care about) and, for inputs that parse
as JSON, structural (a value replaced by one of another type, a key dropped, a value nested
deep, huge and odd numbers, long texts). Coverage guidance is atheris's job (each target also
runs under it); this one is cheap, has no dependency, and is what the tests run.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import json
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TARGETS = ("state", "hooks", "rules", "transcripts")

TOKENS = (
    b"null", b"true", b"false", b"0", b"-1", b"1e999", b"-0.0", b"NaN", b"Infinity",
    b"9" * 25, b"1" * 5000, b"\"\"", b"[]", b"{}", b"[[[[[[[[", b"]]]]", b"\\u0000",
    b"\\ud800", b"\\udfff", b"\xff\xfe", b"\x00", b"\x1b[2J", b"\"x\":", b",", b":", b"\"",
    b"LGS\x01\x00", b"LGS\x01\x01", b"x\x9c", b"\n", b"{\"a\":", b"\xe2\x80\xae",
)  # fmt: skip
ODD_VALUES: tuple[Any, ...] = (
    None, True, False, 0, -1, 1, 2**63, -(2**63) - 1, 2**64, 10**30, 1.5, -0.0, 1e308,
    "", "x", "0", "07", "null", "\x00", "\ud800", "\u202e", "a" * 300, [], {}, [[]], {"": {}},
    [1, 2, 3], ["x"], {"x": None},
)  # fmt: skip


@dataclass
class Crash(Exception):
    """The property failed for `data` (the input is kept for the report)."""

    target: str
    index: int
    data: bytes
    error: BaseException

    def __str__(self) -> str:
        shown = self.data[:300]
        return (
            f"{self.target}: input #{self.index} ({len(self.data)} bytes) failed: "
            f"{type(self.error).__name__}: {str(self.error)[:500]}\n  input: {shown!r}"
            + (" ..." if len(self.data) > 300 else "")
        )


def load(name: str) -> Any:
    """The target module `fuzz/<name>_target.py`."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    return importlib.import_module(f"{name}_target")


def _byte_mutation(data: bytes, rng: random.Random, seeds: list[bytes]) -> bytes:
    buf = bytearray(data)
    choice = rng.randrange(8)
    pos = rng.randrange(len(buf) + 1)
    if choice == 0 and buf:
        i = rng.randrange(len(buf))
        buf[i] ^= 1 << rng.randrange(8)
    elif choice == 1 and buf:
        buf[rng.randrange(len(buf))] = rng.randrange(256)
    elif choice == 2:
        buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    elif choice == 3 and buf:
        end = min(len(buf), pos + rng.randint(1, 64))
        del buf[pos:end]
    elif choice == 4 and buf:
        start = rng.randrange(len(buf))
        piece = bytes(buf[start : start + rng.randint(1, 64)])
        buf[pos:pos] = piece * rng.randint(1, 16)
    elif choice == 5 and seeds:
        other = rng.choice(seeds)
        cut = rng.randrange(len(other) + 1)
        buf = buf[:pos] + bytearray(other[cut:])
    elif choice == 6:
        token = rng.choice(TOKENS)
        end = min(len(buf), pos + rng.randint(0, 8))
        buf[pos:end] = token
    else:
        del buf[pos:]
    return bytes(buf)


def _nodes(value: Any) -> list[tuple[tuple[Any, ...], Any]]:
    """(path, value) of every node, iteratively; not below 100 levels (mutated deep values)."""
    found: list[tuple[tuple[Any, ...], Any]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        found.append((path, item))
        if len(path) >= 100:
            continue
        if isinstance(item, dict):
            stack.extend(((*path, key), child) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend(((*path, i), child) for i, child in enumerate(item))
    return found


def _replace(root: Any, path: tuple[Any, ...], new: Any, drop: bool = False) -> Any:
    if not path:
        return new
    parent = root
    for step in path[:-1]:
        parent = parent[step]
    if drop:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return root


def _near_value(rng: random.Random, old: Any) -> Any:
    """A value of the same type as `old`, changed: what a damaged record still parses as."""
    if isinstance(old, bool):
        return not old
    if isinstance(old, int):
        return rng.choice((0, -1, 1, old + 1, old - 1, -old, 2**62, 2**63 - 1, -(2**62)))
    if isinstance(old, float):
        return rng.choice((0.0, -old, old * 1e300, 1e-300))
    if isinstance(old, str):
        half = old[: len(old) // 2]
        return rng.choice(("", "x", old[::-1], old + "0", "zz", "\x00", half, old * 2, "07"))
    if isinstance(old, list):
        items = list(old)
        if items and rng.random() < 0.4:
            items.insert(rng.randrange(len(items) + 1), rng.choice(items))
        elif items and rng.random() < 0.5:
            del items[rng.randrange(len(items))]
        else:
            rng.shuffle(items)
        return items
    if isinstance(old, dict):
        items = dict(old)
        if items and rng.random() < 0.5:
            del items[rng.choice(list(items))]
        else:
            items[rng.choice(("x", "x:x", "_open", "doom_loop_exact", ""))] = _odd_constant(rng)
        return items
    return _odd_constant(rng)


def _odd_constant(rng: random.Random, among: int = len(ODD_VALUES)) -> Any:
    """One of the first `among` ODD_VALUES, copied: a later mutation of the document it
    goes into must not change the constant (the next inputs would then differ for one seed)."""
    return copy.deepcopy(rng.choice(ODD_VALUES[:among]))


def _odd_value(rng: random.Random, old: Any) -> Any:
    if rng.random() < 0.6:
        return _near_value(rng, old)
    choice = rng.randrange(6)
    if choice == 0:
        return _odd_constant(rng)
    if choice == 1:  # the same value nested deep
        depth = rng.choice((2, 50, 900))
        value = old
        for _ in range(depth):
            value = [value]
        return value
    if choice == 2 and isinstance(old, str):
        return old * rng.randint(2, 50)
    if choice == 3 and isinstance(old, int) and not isinstance(old, bool):
        return rng.choice((old + 1, -old, old * 10**20, str(old), float(old)))
    if choice == 4:
        return {"x": old} if rng.random() < 0.5 else [old, old]
    return _odd_constant(rng, 12)


def _json_start(data: bytes) -> list[int]:
    """Where a JSON document may start: 0, and the first bracket in the first 40 bytes."""
    starts = [0]
    for i, byte in enumerate(data[:40]):
        if byte in b"[{":
            starts.append(i)
            break
    return starts


def _json_mutation(data: bytes, rng: random.Random) -> bytes | None:
    """A structural change of `data` when it is JSON (with a short binary prefix kept)."""
    for skip in _json_start(data):
        head, body = data[:skip], data[skip:]
        try:
            doc = json.loads(body)
        except (ValueError, RecursionError):
            continue
        nodes = _nodes(doc)
        if rng.random() < 0.5:  # one leaf changed within its type: the record still parses
            leaves = [(p, v) for p, v in nodes if p and not isinstance(v, (dict, list))]
            if leaves:
                path, old = rng.choice(leaves)
                doc = _replace(doc, path, _near_value(rng, old))
                nodes = []
        for _ in range(rng.randint(1, 3) if nodes else 0):
            path, old = rng.choice(nodes)
            if path and rng.random() < 0.1:
                doc = _replace(doc, path, None, drop=True)
                nodes = _nodes(doc)
                continue
            doc = _replace(doc, path, _odd_value(rng, old))
            nodes = _nodes(doc)
        try:
            text = json.dumps(doc, ensure_ascii=rng.random() < 0.5)
        except (ValueError, RecursionError):
            return None
        return head + text.encode("utf-8", "surrogatepass")
    return None


def inputs(seeds: list[bytes], runs: int, seed: int) -> Iterator[bytes]:
    """The seeds, then `runs` inputs mutated from them, always the same for one `seed`."""
    rng = random.Random(seed)
    yield from seeds
    pool = list(seeds)
    for _ in range(runs):
        data = rng.choice(pool)
        for _ in range(rng.choice((1, 1, 2, 4))):
            mutated = _json_mutation(data, rng) if rng.random() < 0.75 else None
            data = mutated if mutated is not None else _byte_mutation(data, rng, seeds)
        if len(data) > 1 << 20:
            data = data[: 1 << 20]
        if rng.random() < 0.05 and len(pool) < 4 * len(seeds) + 200:
            pool.append(data)  # an input to mutate further (not coverage-guided)
        yield data


def run(
    name: str,
    runs: int,
    seed: int = 1,
    target: Callable[[bytes], Any] | None = None,
    max_seconds: float | None = None,
) -> int:
    """Feed the target its seeds and `runs` mutated inputs; the number run. `Crash` on failure.
    `max_seconds` stops early (then the count, not the inputs, depends on the machine)."""
    module = load(name)
    check = target or getattr(module, "one", None) or module.target
    started = time.monotonic()
    count = 0
    for index, data in enumerate(inputs(module.seeds(), runs, seed)):
        try:
            check(data)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - anything the property did not allow
            raise Crash(name, index, data, exc) from exc
        count += 1
        if max_seconds is not None and time.monotonic() - started > max_seconds:
            break
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", choices=TARGETS)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--crash-dir", default=".", help="where a failing input is written")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        count = run(args.target, args.runs, args.seed)
    except Crash as crash:
        out = Path(args.crash_dir) / f"crash-{args.target}-{args.seed}-{crash.index}"
        out.write_bytes(crash.data)
        print(f"{crash}\n  written to {out}", file=sys.stderr)
        return 1
    took = time.monotonic() - started
    print(f"{args.target}: {count} inputs, no failure, {took:.1f} s (seed {args.seed})")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("LOOPGUARD_DISABLE_PLUGIN_AUTOLOAD", "1")
    sys.exit(main())
