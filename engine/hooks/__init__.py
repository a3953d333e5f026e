"""`loopguard hook DIALECT`: loopguard as the command a coding agent runs around each tool call.

Each agent (Claude Code, Codex CLI, Gemini CLI, GitHub Copilot, Cursor) starts the command as
a new process per event, passes one JSON event on stdin and reads a decision on stdout. The
dialect modules (`dialects/`) translate events and answers; `runner` maps an event onto the
Session API, with the session's state in a SQLite file (`paths`), the hook's own bookkeeping
in `journal`, and the guard built from a cache (`guardcache`) so a process starts fast. See
docs/hooks.md.
"""
