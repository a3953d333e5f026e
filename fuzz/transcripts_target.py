"""atheris harness for the transcript readers behind `loopguard replay` (issue #10).

    python fuzz/transcripts_seed.py fuzz/corpus-transcripts
    python fuzz/transcripts_target.py fuzz/corpus-transcripts -max_total_time=600 -max_len=16384

Each input is a transcript file's bytes. Its first byte picks how it is read: format
detection, or one of the `--input-format` readers forced; the rest is written to a
file and replayed through `loopguard.cli.main` (report to a string). The property:
the replay returns 0, 1 or 2 and raises nothing, whatever the bytes.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile

import atheris

with atheris.instrument_imports(include=["loopguard"]):
    from loopguard.cli import main as cli
    from loopguard.replay.transcripts.detect import FORMATS

CHOICES = [None, *FORMATS]
_DIR = tempfile.mkdtemp(prefix="loopguard-fuzz-")
_PATH = os.path.join(_DIR, "transcript")


def target(data: bytes) -> None:
    if not data:
        return
    choice = CHOICES[data[0] % len(CHOICES)]
    with open(_PATH, "wb") as fh:
        fh.write(data[1:])
    argv = ["replay", "--color", "never", _PATH]
    if choice is not None:
        argv[1:1] = ["--input-format", choice]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli(argv)
    if code not in (0, 1, 2) or "Traceback" in err.getvalue():
        raise AssertionError(f"exit {code}: {err.getvalue()[-2000:]}")


def main() -> None:
    atheris.Setup(sys.argv, target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
