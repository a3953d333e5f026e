"""The CLI's standard streams when they are closed or cannot be written.

`loopguard replay t.json >&-` found `sys.stdout` None (an `AttributeError` traceback), and
`> /dev/full` or `-o /dev/full` failed on the first write or at exit (`OSError: [Errno 28]`, or
"Exception ignored" from the interpreter's final flush). So, around one command:

- a closed stdout is a stream whose writes fail with "standard output is closed" (a command
  that writes only to `-o FILE` still works); a closed stderr discards what is written to it
  (there is nowhere to report); a closed stdin reads as closed (`OSError`, which the readers
  turn into their usual one-line error);
- an `OSError` that reaches the top (a write to stdout or to `-o FILE`, or a read no command
  caught) is one line on stderr and exit 2, and stdout is pointed at the null device so the
  interpreter's final flush has nothing left to fail on.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class _ClosedOutput(io.TextIOBase):
    """Stands in for a closed stdout: every write fails as writing to fd 1 would have."""

    encoding = "utf-8"
    errors = "strict"

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False


class _Discard(io.TextIOBase):
    """Stands in for a closed stderr: what is written goes nowhere (there is nowhere else)."""

    encoding = "utf-8"
    errors = "strict"

    def write(self, text: str) -> int:
        return len(text)

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False


@contextmanager
def standard_streams() -> Iterator[None]:
    """Closed standard streams replaced by the stand-ins above for one command."""
    replaced: list[tuple[str, Any]] = []
    for name, stand_in in (("stdout", _ClosedOutput), ("stderr", _Discard)):
        if getattr(sys, name) is None:
            replaced.append((name, None))
            setattr(sys, name, stand_in())
    try:
        yield
    finally:
        for name, value in replaced:
            setattr(sys, name, value)


def output_failed(command: str, exc: OSError) -> int:
    """Report an `OSError` that reached the top as one line; returns the exit code (2)."""
    where = f"{os.fsdecode(exc.filename)}: " if exc.filename else "cannot write the output: "
    reason = exc.strerror or str(exc) or type(exc).__name__
    try:
        print(f"loopguard {command}: {where}{reason}", file=sys.stderr)
    except (OSError, ValueError):
        pass
    _discard_stdout()
    return 2


def flush_stdout() -> None:
    """Flush stdout now, so a write error is reported here and not at the interpreter's exit."""
    stream = sys.stdout
    if stream is not None:
        stream.flush()


def _discard_stdout() -> None:
    """Point the process's stdout at the null device: what is still buffered for it (or the
    final flush) then cannot fail at exit. Only the real stdout: a caller's redirection (a
    test's StringIO) is left alone."""
    stream = sys.__stdout__
    if stream is None or sys.stdout is not stream:
        return
    try:
        fd = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, fd)
        finally:
            os.close(null)
    except (OSError, ValueError, io.UnsupportedOperation):
        pass
