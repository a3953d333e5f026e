"""Where the hook keeps its files, and the environment variables it reads.

`$XDG_STATE_HOME/loopguard/` (default `~/.local/state/loopguard/`) holds `hooks.db` (the
sessions' state and the hook's bookkeeping) and `hooks.log`; `$XDG_CACHE_HOME/loopguard/`
(default `~/.cache/loopguard/`) the compiled-rules cache, which can be deleted at any time;
`$XDG_RUNTIME_DIR/loopguard/` (else the state folder) the hook server's socket.
"""

from __future__ import annotations

import os
from pathlib import Path

MAX_EVENT_BYTES = 64 * 1024 * 1024  # an event larger than this is not guarded (allowed)
SERVER_ENV = "LOOPGUARD_HOOK_SERVER"  # "off" (or 0/false/no): every event in its own process
SERVER_IDLE_ENV = "LOOPGUARD_HOOK_SERVER_IDLE"  # seconds an idle hook server lives (default 600)
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


def runtime_dir() -> Path:
    """Where the hook server's socket lives: `$XDG_RUNTIME_DIR/loopguard`, else the state
    folder."""
    value = os.environ.get("XDG_RUNTIME_DIR", "")
    return Path(value) / "loopguard" if value and os.path.isabs(value) else state_dir()


def database() -> Path:
    return state_dir() / "hooks.db"


def log_file() -> Path:
    return state_dir() / "hooks.log"
