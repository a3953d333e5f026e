"""The error raised when an adapter's framework is not installed."""

from __future__ import annotations

from loopguard.errors import install_hint


def needs(extra: str, exc: ImportError) -> ImportError:
    """An ImportError naming the missing module and the extra that installs it."""
    missing = exc.name or str(exc)
    return ImportError(
        f"loopguard's {extra} integration needs {missing!r}, which is not installed: "
        + install_hint(extra),
        name=exc.name,
    )
