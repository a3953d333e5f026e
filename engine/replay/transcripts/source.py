"""Opening an input file safely and reading it without loading it whole.

`Source` reads bytes (so it can count them for a progress bar), checks that the file is text, and
hands out either the first few kilobytes (for format detection), its lines (for JSONL), or chunks
(for streamed JSON documents). Problems that make the file unreadable raise `InputError`; problems
on one line come back as warning `Finding`s so the replay can go on. Gzipped files (`.traj.gz`,
`*.jsonl.gz`) are read through gzip, found by their magic bytes; the path `-` is standard input,
spooled first (readers open the file more than once) to an unnamed temporary file, at most
`STDIN_MAX_BYTES`, so nothing is left behind however the process ends. Only regular files are
read: a FIFO, a device or `/dev/stdin` on a pipe would block or lose the bytes read for detection.
Positions are 1-based everywhere: a problem with the whole file is at `1:1`.
"""

from __future__ import annotations

import codecs
import gzip
import io
import os
import stat
import sys
import tempfile
import weakref
import zlib
from collections.abc import Iterator
from typing import IO, Any, BinaryIO

from loopguard.errors import InputError
from loopguard.findings import Finding
from loopguard.text.jsontext import loads

HEAD_BYTES = 64 * 1024
CHUNK_BYTES = 256 * 1024
STDIN = "-"
STDIN_NAME = "<stdin>"
STDIN_MAX_BYTES = 1 << 30  # standard input spooled at most (a file by its path has no limit)
MAX_ELEMENT_BYTES = 256 * 1024 * 1024  # one JSONL line or JSON element at most (after gunzip)
_GZIP_MAGIC = b"\x1f\x8b"
LONG_LINE = "<a line over the limit>"  # the text `lines()` gives for one (compared by identity)


def input_error(file: str, line: int, message: str, hint: str = "", code: str = "") -> InputError:
    """An `InputError` with one finding at `file:line` (line 0 means the whole file: `1:1`)."""
    return InputError([Finding(file, max(line, 1), 1, "error", message, hint=hint, code=code)])


def warning(file: str, line: int, message: str, code: str, hint: str = "") -> Finding:
    """A warning about one spot of an input file; the replay goes on."""
    return Finding(file, max(line, 1), 1, "warning", message, hint=hint, code=code)


def not_found(file: str, what: str, hint: str) -> InputError:
    """A reader found nothing of its format in the file: `no WHAT found`."""
    return input_error(file, 1, f"no {what} found", code="wrong-shape", hint=hint)


def _spool_stdin() -> IO[bytes]:
    """Standard input copied into a temporary file that has no name on disk.

    At most STDIN_MAX_BYTES; a binary start (a NUL byte, not gzip) stops the copy there,
    since `Source.head` refuses it anyway (`replay - < /dev/zero` used to fill the disk).
    """
    if sys.stdin is None:
        raise input_error(STDIN_NAME, 0, "standard input is closed", code="unreadable")
    reader = sys.stdin.buffer
    spool = tempfile.TemporaryFile(prefix="loopguard-stdin-")
    try:
        head = reader.read(HEAD_BYTES)
        spool.write(head)
        total = len(head)
        binary = b"\x00" in head and not head.startswith(_GZIP_MAGIC)
        while not binary and (chunk := reader.read(CHUNK_BYTES)):
            total += len(chunk)
            if total > STDIN_MAX_BYTES:
                raise input_error(
                    STDIN_NAME,
                    0,
                    f"standard input is larger than {STDIN_MAX_BYTES >> 20:,} MiB",
                    code="too-large",
                    hint="pass the transcript by its path (files are read without this limit)",
                )
            spool.write(chunk)
        spool.flush()
    except OSError as exc:
        spool.close()
        raise input_error(
            STDIN_NAME,
            0,
            f"cannot read standard input: {exc.strerror or exc}",
            code="unreadable",
        ) from None
    except BaseException:
        spool.close()
        raise
    return spool


class _SpoolReader(io.RawIOBase):
    """One reader of the stdin spool, with its own position (readers open the input again)."""

    def __init__(self, spool: IO[bytes]) -> None:
        self._spool, self._pos = spool, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._spool.seek(self._pos)
        count = self._spool.readinto(buffer)  # type: ignore[attr-defined]
        self._pos += count or 0
        return count or 0


def _kind(mode: int) -> str:
    """What a non-regular file is, for the error message."""
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


class Source:
    """One input file: its display name, size, and how many bytes were read so far."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.name = path
        self.bytes_read = 0
        self.head_complete = False  # set by head(): the whole file fits in the head
        self._spool: IO[bytes] | None = None
        if path == STDIN:
            self.name = STDIN_NAME
            self._spool = spool = _spool_stdin()
            weakref.finalize(self, spool.close)
            self.size = spool.tell()
            spool.seek(0)
            self.gzipped = spool.read(2) == _GZIP_MAGIC
            return
        try:
            mode = os.stat(path).st_mode
            if stat.S_ISDIR(mode):
                raise input_error(
                    self.name, 0, "is a directory, not a transcript file", code="not-a-file"
                )
            if not stat.S_ISREG(mode):
                raise input_error(
                    self.name,
                    0,
                    f"is {_kind(mode)}, not a regular file",
                    code="not-a-file",
                    hint="transcripts are read from regular files; pipe one in with '-' "
                    "(e.g. cat run.jsonl | loopguard replay -)",
                )
            self.size = os.path.getsize(path)
            with open(path, "rb") as fh:  # fail now, with a clear message, if unreadable
                self.gzipped = fh.read(2) == _GZIP_MAGIC
        except FileNotFoundError:
            raise input_error(path, 0, "file not found", code="missing-file") from None
        except PermissionError:
            raise input_error(
                path, 0, "cannot read the file: permission denied", code="unreadable"
            ) from None
        except OSError as exc:
            raise input_error(
                path, 0, f"cannot read the file: {exc.strerror or exc}", code="unreadable"
            ) from None

    @property
    def default_session(self) -> str:
        """The session name of a file that does not name its own session: its path, normalised.

        Readers name a session by what the file says; only a file that says nothing is named
        after its path, written one way however it was given (`./a/b.jsonl` and `a/b.jsonl`
        are `a/b.jsonl`), so two spellings of one file are one session.
        """
        return STDIN_NAME if self.path == STDIN else os.path.normpath(self.path)

    def open_binary(self) -> BinaryIO | gzip.GzipFile:
        """The file's bytes (decompressed when gzipped)."""
        try:
            raw = (
                open(self.path, "rb")
                if self._spool is None
                else io.BufferedReader(_SpoolReader(self._spool), CHUNK_BYTES)
            )
        except OSError as exc:
            raise input_error(
                self.name, 0, f"cannot read the file: {exc.strerror or exc}", code="unreadable"
            ) from None
        if self.gzipped:
            return _Gunzip(raw, self.name)
        return raw

    def head(self) -> str:
        """The first kilobytes as text; raises on an empty, binary or non-UTF-8 file."""
        with self.open_binary() as fh:
            raw = fh.read(HEAD_BYTES)
        self.head_complete = len(raw) < HEAD_BYTES
        if not raw.strip():
            raise input_error(
                self.name,
                1,
                "the file is empty",
                code="empty-file",
                hint="a transcript needs at least one message or event",
            )
        if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            raise input_error(
                self.name,
                1,
                "the file is UTF-16 encoded",
                code="binary-file",
                hint="convert it to UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)",
            )
        if b"\x00" in raw:
            raise input_error(
                self.name,
                raw[: raw.index(b"\x00")].count(b"\n") + 1,
                "the file is binary (it contains NUL bytes), not JSON or JSONL text",
                code="binary-file",
            )
        decoder = codecs.getincrementaldecoder("utf-8")()
        try:
            text = decoder.decode(raw, final=len(raw) < HEAD_BYTES)
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise input_error(
                self.name, line, "the file is not UTF-8 text (it looks binary)", code="binary-file"
            ) from None
        return text.lstrip("\ufeff")

    def lines(self) -> Iterator[tuple[int, str | None, bool]]:
        """(line number, text or None when not UTF-8, ends with a newline) for each line.

        A line over MAX_ELEMENT_BYTES is never held: it comes as (number, LONG_LINE, True),
        the rest of it read past in chunks.
        """
        with self.open_binary() as fh:
            number = 0
            while raw := fh.readline(MAX_ELEMENT_BYTES + 1):
                number += 1
                self.bytes_read += len(raw)
                if len(raw) > MAX_ELEMENT_BYTES and not raw.endswith(b"\n"):
                    del raw
                    while (rest := fh.readline(CHUNK_BYTES)) and not rest.endswith(b"\n"):
                        self.bytes_read += len(rest)
                    self.bytes_read += len(rest)
                    yield number, LONG_LINE, True
                    continue
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    yield number, None, raw.endswith(b"\n")
                    continue
                if number == 1:
                    text = text.lstrip("\ufeff")
                yield number, text, text.endswith("\n")

    def chunks(self) -> Iterator[str]:
        """The file as text chunks (for streaming a JSON document)."""
        decoder = codecs.getincrementaldecoder("utf-8")()
        with self.open_binary() as fh:
            first = True
            while True:
                raw = fh.read(CHUNK_BYTES)
                self.bytes_read += len(raw)
                try:
                    text = decoder.decode(raw, final=not raw)
                except UnicodeDecodeError:
                    raise input_error(
                        self.name, 0, "the file is not valid UTF-8 text", code="binary-file"
                    ) from None
                if first:
                    text, first = text.lstrip("\ufeff"), False
                if text:
                    yield text
                if not raw:
                    return


def json_lines(source: Source) -> Iterator[tuple[int, Any] | Finding]:
    """Parsed values of a JSONL file, one per non-blank line; bad lines become warnings.

    A last line that does not parse and has no final newline is reported as
    truncated (the writer was probably interrupted).
    """
    pending: tuple[int, str | None, bool] | None = None
    for item in source.lines():
        if pending is not None:
            yield _parse_line(source.name, *pending, last=False)
        number, text, _ = item
        pending = item if text is None or text.strip() else None
    if pending is not None:
        yield _parse_line(source.name, *pending, last=True)


def _parse_line(
    file: str, number: int, text: str | None, newline: bool, *, last: bool
) -> tuple[int, Any] | Finding:
    if text is None:
        return warning(file, number, "line is not UTF-8 text; skipped", "bad-line")
    if text is LONG_LINE:
        return warning(
            file,
            number,
            f"line is longer than {MAX_ELEMENT_BYTES >> 20:,} MiB (the limit for one message); "
            "skipped",
            "bad-line",
        )
    try:
        return number, loads(text)
    except RecursionError:
        return warning(file, number, "line is nested too deeply to read; skipped", "bad-line")
    except ValueError as exc:
        if last and not newline:
            return warning(
                file,
                number,
                "the last line is truncated (incomplete JSON); skipped",
                "truncated-line",
                hint="the recording was probably cut off while writing",
            )
        col = getattr(exc, "colno", 1)
        detail = getattr(exc, "msg", str(exc))
        return Finding(
            file,
            number,
            max(col, 1),
            "warning",
            f"line is not valid JSON ({detail}); skipped",
            code="bad-line",
        )


class _Gunzip(gzip.GzipFile):
    """A gzip reader whose corrupt or cut-off data is an `InputError`, not a traceback."""

    def __init__(self, raw: IO[bytes], name: str) -> None:
        super().__init__(fileobj=raw, mode="rb")
        self._raw, self._name = raw, name

    def read(self, size: int | None = -1) -> bytes:
        try:
            return super().read(size)
        except (OSError, EOFError, zlib.error) as exc:
            raise self._damaged(exc) from None

    def readline(self, size: int | None = -1) -> bytes:
        try:
            return super().readline(size)
        except (OSError, EOFError, zlib.error) as exc:
            raise self._damaged(exc) from None

    def _damaged(self, exc: Exception) -> InputError:
        """The input error for gzip data that is damaged or cut off."""
        return input_error(
            self._name, 0, f"the gzip data is damaged or cut off ({exc})", code="bad-gzip"
        )

    def close(self) -> None:
        super().close()
        self._raw.close()
