"""What every dialect declares: its events, how to read them, how to answer, how to install.

A dialect is data plus two small functions. `events` maps the agent's event names to
loopguard's kinds (`loopguard.hooks.event`); `parse` reads one payload into a `HookEvent`;
`render` writes an `Answer` the way the agent reads it. `install` says where the agent's
settings live and which events `loopguard hook install` registers (loopguard.hooks.install).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from loopguard.hooks.event import IGNORED, Answer, EventError, HookEvent, Rendered


@dataclass(frozen=True)
class Install:
    """Where an agent keeps its hook settings, and what `loopguard hook install` writes.

    `layout` "nested" is Claude Code's shape, which Codex and Gemini CLI share:
    `{"hooks": {EVENT: [{"matcher": M, "hooks": [{"type": "command", "command": C, ...}]}]}}`;
    "flat" is Copilot's and Cursor's: `{"version": 1, "hooks": {EVENT: [{..., C}]}}`.
    """

    project: str  # the settings file, relative to the project folder
    user: str  # the settings file, relative to the home folder
    events: tuple[tuple[str, str | None], ...]  # (event name, matcher or None) to register
    layout: str  # "nested" or "flat"
    command_keys: tuple[str, ...] = ("command",)  # the entry's keys that hold the command
    timeout: tuple[str, int] | None = None  # the entry's timeout key and value (agent's unit)
    entry_extra: Mapping[str, Any] = field(default_factory=dict)  # e.g. {"type": "command"}
    file_extra: Mapping[str, Any] = field(default_factory=dict)  # e.g. {"version": 1}
    # events whose payload does not name the event: their command ends `--event NAME`
    named: tuple[str, ...] = ()
    default_scope: str = "project"  # what `loopguard hook install` writes without --project/--user
    comments: bool = False  # the agent strips // and /* */ comments before parsing the file
    user_env: str | None = None  # a variable that, when set, is the user file's folder (not home)
    # the settings path (keys) that turns the agent's own loop detection off when set to true
    builtin_loop_switch: tuple[str, ...] = ()
    note: str = ""  # printed after installing: steps the agent asks of the user (e.g. trust)


@dataclass(frozen=True)
class Dialect:
    """One agent's hook protocol."""

    name: str
    title: str  # the agent's name, for messages and docs
    events: Mapping[str, str]  # the agent's event name -> loopguard's kind
    parse: Callable[[Mapping[str, Any], str], HookEvent]  # (payload, event name) -> event
    render: Callable[[HookEvent, Answer], Rendered]
    install: Install
    event_key: str = "hook_event_name"  # the payload field naming the event
    batches: bool = False  # the agent reports the end of a response's calls (BATCH_END)
    ends_turn: bool = True  # a tool hook can end the agent's turn (else: deny every call)

    def event_name(self, payload: Mapping[str, Any], given: str | None = None) -> str:
        """The event's name: the payload's, else `given` (the command's `--event`)."""
        name = payload.get(self.event_key) or given
        if not isinstance(name, str) or not name:
            raise EventError(f"the event has no {self.event_key!r} (a string)")
        return name

    def read(self, payload: Any, given: str | None = None) -> HookEvent:
        """The event `payload` (parsed JSON) describes; EventError when it cannot be read.
        `given`: the event name the command line names (`--event`), for payloads without."""
        if not isinstance(payload, Mapping):
            raise EventError(f"the event is a JSON {type(payload).__name__}, not an object")
        name = self.event_name(payload, given)
        if self.events.get(name, IGNORED) == IGNORED:
            return HookEvent(IGNORED, name, "")
        return self.parse(payload, name)


def text(payload: Mapping[str, Any], *keys: str) -> str | None:
    """The first of `keys` that holds a non-empty string (numbers as text), else None."""
    for key in keys:
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return None


def session_key(
    payload: Mapping[str, Any], session_keys: tuple[str, ...], agent_keys: tuple[str, ...] = ()
) -> str:
    """The agent's session id, with "/" and the sub-agent's id when the event has one."""
    session = text(payload, *session_keys)
    if session is None:
        raise EventError(f"the event has no session id ({' or '.join(session_keys)})")
    agent = text(payload, *agent_keys) if agent_keys else None
    return f"{session}/{agent}" if agent else session


def claude_style(event: HookEvent, answer: Answer, deny_decision: bool = False) -> dict[str, Any]:
    """The answer in Claude Code's output format (Codex and VS Code read it too).

    With `deny_decision` (Gemini CLI's shape), a deny is the top-level `decision: "deny"`
    with its reason, as a retry is, instead of a `permissionDecision`.
    """
    out: dict[str, Any] = {}
    if answer.deny is not None and not deny_decision:
        out["hookSpecificOutput"] = {
            "hookEventName": event.name,
            "permissionDecision": "deny",
            "permissionDecisionReason": answer.deny,
        }
    elif answer.context and answer.deny is None:
        out["hookSpecificOutput"] = {
            "hookEventName": event.name,
            "additionalContext": answer.context,
        }
    reason = answer.deny if deny_decision else None
    if answer.retry is not None:
        reason = answer.retry
    if reason is not None:
        out["decision"] = "deny" if deny_decision else "block"
        out["reason"] = reason
    if answer.end_turn is not None:
        out["continue"] = False
        out["stopReason"] = answer.end_turn
    if answer.user:
        out["systemMessage"] = answer.user
    return out
