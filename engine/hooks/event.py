"""What a hook event means to loopguard, whatever agent sent it, and what loopguard answers.

A dialect turns the agent's JSON into a `HookEvent` (one of the `KINDS`) and renders an
`Answer` back into the agent's JSON; the runner in between only sees these two records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PROMPT = "prompt"  # the user submitted a prompt: a new turn
PRE = "pre"  # a tool call is about to run
POST = "post"  # it ran and returned a result
FAILURE = "failure"  # it ran and failed (an error instead of a result)
BATCH_END = "batch_end"  # the calls of one model response are all answered
STOP = "stop"  # the agent is about to end its turn
COMPACT = "compact"  # the context is about to be compacted
SESSION_START = "session_start"
SESSION_END = "session_end"  # the session's state can go
PERMISSION = "permission"  # Copilot asks whether a call may run (after its pre event)
IGNORED = "ignored"  # an event loopguard does not act on (answered with nothing)
KINDS = (
    PROMPT,
    PRE,
    POST,
    FAILURE,
    BATCH_END,
    STOP,
    COMPACT,
    SESSION_START,
    SESSION_END,
    PERMISSION,
    IGNORED,
)


class EventError(ValueError):
    """The event cannot be read (not an object, no event name, no session id)."""


@dataclass
class HookEvent:
    """One agent event, in loopguard's terms."""

    kind: str
    name: str  # the agent's own event name, as sent (answers echo it)
    session: str  # the session key: the agent's session id, "/" and the sub-agent id if any
    tool: str = ""
    args: Any = None
    result: Any = None
    error: str | None = None
    call_id: str | None = None
    prompt: str = ""
    text: str | None = None  # the model's last message, on a stop event
    cwd: str | None = None  # the event's working directory (finds the project's rules)


@dataclass
class Answer:
    """What loopguard tells the agent; each dialect renders the fields it can express."""

    deny: str | None = None  # the call must not run; the model sees this as its result
    end_turn: str | None = None  # end the agent's turn now, with this reason (a breaker)
    context: str | None = None  # a note appended for the model after a call ran
    retry: str | None = None  # a stop event: keep working, with this text as the prompt
    user: str | None = None  # a message shown to the user (not the model)
    closed: bool = False  # the turn's tools are closed (Copilot's permission event interrupts)


@dataclass(frozen=True)
class Rendered:
    """The hook process's reply: stdout JSON (None: print nothing), exit code, stderr text."""

    output: dict[str, Any] | None
    exit_code: int = 0
    stderr: str = ""
