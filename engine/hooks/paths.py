"""Where the hook keeps its files: state (the SQLite file, the log) and its start-up cache.

`$XDG_STATE_HOME/loopguard/` (default `~/.local/state/loopguard/`) holds `hooks.db` (the
sessions' state and the hook's bookkeeping) and `hooks.log`; `$XDG_CACHE_HOME/loopguard/`
(default `~/.cache/loopguard/`) the compiled-rules cache, which can be deleted at any time.
"""

from __future__ import annotations

import os
from pathlib import Path

STORE_ENV = "LOOPGUARD_STORE"  # a store URL (redis://…, or a SQLite file path) overriding hooks.db
RULES_ENV = "LOOPGUARD_RULES"
PROJECT_ENVS = ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR")  # the project folder, if the agent says
RULES_FILES = ("loopguard.yaml", ".loopguard.yaml")  # looked for in the project folder


def _base(variable: str, default: str) -> Path:
    value = os.environ.get(variable, "")
    base = Path(value) if value and os.path.isabs(value) else Path.home() / default
    return base / "loopguard"


def state_dir() -> Path:
    return _base("XDG_STATE_HOME", ".local/state")


def cache_dir() -> Path:
    return _base("XDG_CACHE_HOME", ".cache")


def database() -> Path:
    return state_dir() / "hooks.db"


def log_file() -> Path:
    return state_dir() / "hooks.log"
