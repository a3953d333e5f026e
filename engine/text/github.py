"""Escaping for GitHub Actions workflow commands (`::error file=F,line=L::message`).

Used by `loopguard lint --format github` and `loopguard replay --format github`.
"""

from __future__ import annotations


def escape_data(text: str) -> str:
    """The message part: `%`, CR and LF escaped so one annotation stays one command."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (`file=`, `title=`): also `:` and `,`, which end a property."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")
