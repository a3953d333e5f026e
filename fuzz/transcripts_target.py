"""atheris harness for the transcript readers behind `loopguard replay` (issue #10).

    python fuzz/transcripts_seed.py fuzz/corpus-transcripts
    python fuzz/transcripts_target.py fuzz/corpus-transcripts -max_total_time=600 -max_len=16384

Each input is a transcript file's bytes. Its first byte picks how it is read: format
detection, or one of the `--input-format` readers forced; the rest is written to a
file and replayed through `loopguard.cli.main` (report to a string). The property:
the replay returns 0, 1 or 2 and raises nothing, whatever the bytes.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import shutil
import sys
import tempfile

try:
    import atheris
except ImportError:  # fuzz/mutate.py (the suite's short run) needs no atheris
    atheris = None

if atheris is not None:
    with atheris.instrument_imports(include=["loopguard"]):
        from loopguard.cli import main as cli
        from loopguard.replay.transcripts.detect import FORMATS
else:
    from loopguard.cli import main as cli
    from loopguard.replay.transcripts.detect import FORMATS

CHOICES = [None, *FORMATS]
_PATH = ""


def _path() -> str:
    """The file each input is written to (a temporary folder, removed at exit)."""
    global _PATH
    if not _PATH:
        folder = tempfile.mkdtemp(prefix="loopguard-fuzz-")
        atexit.register(shutil.rmtree, folder, True)
        _PATH = os.path.join(folder, "transcript")
    return _PATH


def target(data: bytes) -> None:
    if not data:
        return
    choice = CHOICES[data[0] % len(CHOICES)]
    path = _path()
    with open(path, "wb") as fh:
        fh.write(data[1:])
    argv = ["replay", "--color", "never", path]
    if choice is not None:
        argv[1:1] = ["--input-format", choice]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli(argv)
    if code not in (0, 1, 2) or "Traceback" in err.getvalue():
        raise AssertionError(f"exit {code}: {err.getvalue()[-2000:]}")


def seeds() -> list[bytes]:
    """What fuzz/transcripts_seed.py writes (the agent samples, the property tests' own)."""
    from transcripts_seed import all_seeds

    return all_seeds()


def main() -> None:
    if atheris is None:
        raise SystemExit("pip install atheris first (or run: python fuzz/mutate.py transcripts)")
    atheris.Setup(sys.argv, target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
