"""The agents `loopguard hook` speaks to, one module each, by the name the command takes."""

from __future__ import annotations

from loopguard.hooks.dialects import claude, codex, copilot, cursor, gemini
from loopguard.hooks.dialects.base import Dialect, Install

DIALECTS: dict[str, Dialect] = {
    module.DIALECT.name: module.DIALECT for module in (claude, codex, gemini, copilot, cursor)
}

__all__ = ["DIALECTS", "Dialect", "Install"]
