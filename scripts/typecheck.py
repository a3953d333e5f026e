"""Run mypy on the `loopguard` package as it imports, from this checkout.

The package is laid out by pyproject's `package-dir` (`engine/` is `loopguard`,
`detectors/` is `loopguard.detectors`, ...), so mypy cannot find `loopguard` in the
source tree, nor through an editable install's import hook. This script builds a
throw-away tree of symbolic links with the installed layout and checks it with the
project's mypy settings; extra arguments are more files to check against it (a user's
program, for instance). Exit code: mypy's.

    python scripts/typecheck.py                 # the package
    python scripts/typecheck.py my_program.py   # a program using it, too
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def link_tree(target: Path) -> Path:
    """`target/loopguard` laid out as pyproject's `package-dir` maps it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mapping: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    for package, folder in sorted(mapping.items(), key=lambda item: item[0].count(".")):
        place = target.joinpath(*package.split("."))
        place.parent.mkdir(parents=True, exist_ok=True)
        if package.count(".") == 0:
            place.mkdir()
            for entry in (ROOT / folder).iterdir():
                if entry.name != "__pycache__":
                    (place / entry.name).symlink_to(entry)
        else:
            if place.is_symlink() or place.exists():
                place.unlink()
            place.symlink_to(ROOT / folder)
    return target


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="loopguard-types-") as tmp:
        link_tree(Path(tmp))
        env = {**os.environ, "MYPYPATH": tmp}
        extra = [str(Path(arg).resolve()) for arg in argv]  # mypy runs in the link tree
        command = [
            sys.executable,
            "-m",
            "mypy",
            "--no-incremental",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "loopguard",
            *extra,
        ]
        return subprocess.run(command, env=env, cwd=tmp, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
