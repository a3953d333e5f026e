"""Output that is safe for a terminal, whatever the inputs hold and whatever it can encode.

Tool names, messages, rules keys and file names come from transcripts and rules files that
loopguard did not write. Printed raw, a control character in them acts on the reader's
terminal: `ESC ] 0 ; ... BEL` sets the window title, `ESC [ 2 J` clears the screen, `CR`
overwrites a line, C1 `U+009B` starts a sequence on its own. So everything the CLI writes
goes through `SafeText`, which spells each C0 control but newline and tab, DEL and each C1
control as an escape: `\\x1b` in text and GitHub annotations (as Python's `repr` does, which
lint's messages already use), `\\u001b` in JSON (those characters only occur inside JSON
strings, so the value stays the same and the JSON valid).

A stream that cannot encode a character (`PYTHONIOENCODING=ascii`, `latin-1`, `LC_ALL=C`)
writes it as `\\uXXXX` (`ESCAPE_ERRORS`, a codec error handler: the JSON spelling, so JSON
output stays valid and means the same), never a `UnicodeEncodeError`.
"""

from __future__ import annotations

import codecs
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
ESCAPE_ERRORS = "loopguard-escape"


def escape_controls(text: str) -> str:
    """Every terminal control character but newline and tab as `\\xNN`."""
    if CONTROLS.search(text) is None:
        return text
    return CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def escape_controls_json(text: str) -> str:
    """The same characters as JSON escapes (`\\u001b`), for text that is JSON."""
    if CONTROLS.search(text) is None:
        return text
    return CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _escape_unencodable(error: UnicodeError) -> tuple[str, int]:
    """Codec error handler: what a stream cannot encode becomes `\\uXXXX` (pairs past U+FFFF)."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    parts = []
    for char in error.object[error.start : error.end]:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            parts.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            parts.append(f"\\u{code:04x}")
    return "".join(parts), error.end


codecs.register_error(ESCAPE_ERRORS, _escape_unencodable)


class SafeText:
    """A text stream wrapper that escapes terminal controls in everything written through it."""

    def __init__(self, out: Any, escape: Callable[[str], str] = escape_controls) -> None:
        self.inner = out
        self.escape = escape

    def write(self, text: str) -> int:
        self.inner.write(self.escape(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, buffer, ...
        return getattr(self.inner, name)


def output(out: Any, fmt: str = "text") -> SafeText:
    """`out` for the CLI's output in format `fmt` (JSON gets JSON escapes, the rest `\\xNN`)."""
    return SafeText(out, escape_controls_json if fmt == "json" else escape_controls)


def unwrapped(out: Any) -> Any:
    """The stream under any `SafeText` (for the CLI's own control characters: the progress line)."""
    while isinstance(out, SafeText):
        out = out.inner
    return out


def _tolerant(stream: Any) -> Callable[[], None]:
    """Make `stream` write what it cannot encode as escapes; returns how to undo it."""
    reconfigure = getattr(stream, "reconfigure", None)
    errors = getattr(stream, "errors", None)
    if reconfigure is None or not isinstance(errors, str) or errors == ESCAPE_ERRORS:
        return lambda: None
    try:
        reconfigure(errors=ESCAPE_ERRORS)
    except (ValueError, OSError):  # a closed or detached stream
        return lambda: None

    def undo() -> None:
        try:
            reconfigure(errors=errors)
        except (ValueError, OSError):
            pass

    return undo


@contextmanager
def cli_streams() -> Iterator[None]:
    """For one CLI command: stdout and stderr never fail to encode, stderr escapes controls."""
    undo = [_tolerant(sys.stdout), _tolerant(sys.stderr)]
    stderr = sys.stderr
    if stderr is not None and not isinstance(stderr, SafeText):
        sys.stderr = SafeText(stderr)
    try:
        yield
    finally:
        if sys.stderr is not stderr and isinstance(sys.stderr, SafeText):
            sys.stderr = stderr
        for step in undo:
            step()
