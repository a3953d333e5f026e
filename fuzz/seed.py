"""Write seed inputs for `rules_target.py` into a corpus folder.

Run: `python fuzz/seed.py fuzz/corpus-yaml`.

Seeds are the bundled rules packs and the lint golden cases (YAML and JSON5 alike).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    sources = [
        *ROOT.glob("rules/*.yaml"),
        *ROOT.glob("tests/lint_cases/**/*.yaml"),
        *ROOT.glob("tests/lint_cases/**/*.json5"),
    ]
    for path in sources:
        data = path.read_bytes()
        (out / hashlib.sha1(data).hexdigest()).write_bytes(data)
    print(f"{len(sources)} seeds in {out}")


if __name__ == "__main__":
    main()
