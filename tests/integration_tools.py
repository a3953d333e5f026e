"""The plain tool functions every framework test wraps in its own tool type, and what ran."""

from __future__ import annotations

RAN: list[str] = []


def read(path: str) -> str:
    """Read a file."""
    RAN.append(f"read {path}")
    return "same content"


def write(path: str) -> str:
    """Write a file."""
    RAN.append(f"write {path}")
    return "written"


def broken(path: str) -> str:
    """Always fails."""
    raise ValueError(f"cannot open {path}")


def portfolio(mode: str) -> str:
    """The user's holdings."""
    RAN.append(f"portfolio {mode}")
    return "600000, 000001"
