"""What the model sees: one source for the runtime and every framework adapter.

A guarded tool call ends in one of four ways, and each has one text:

- it may run (`allow`, `warn`): the tool's own result, followed by the guard's note when
  `note_shown(decision)` says so (a warning is shown once per pattern; a breaker raised by
  a post-call detector is always shown);
- it is blocked (`critical`): `tool_result(decision)`, a JSON object with status `blocked`;
- it tripped the breaker: `tool_result(decision)` with status `error`; the turn is over;
- another call of the same batch tripped the breaker: `Session.before_call` answers it as
  aborted (`is_aborted(decision)`), and `tool_result(decision)` has status `aborted`.

`stop_text(model_text, decision)` is the final answer of a turn a breaker ended. Adapters
never build these texts themselves, so a rules file's `messages` block reaches every host.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from loopguard.decision import Decision, Vote
from loopguard.state.fingerprint import canonical_text
from loopguard.text import messages as texts
from loopguard.text.hints import (
    error_text as error_text,
)  # part of the answers API (docs/integrations.md)

ABORTED = "tools_closed"  # the detector id (and vote code) of an aborted call's decision


def aborted(
    config: Any, lang: str | None, tool: str, call_id: str | None, turn: int, run_id: str | None
) -> Decision:
    """The decision `Session.before_call` gives a call of a batch a breaker closed."""
    text = texts.fill(texts.template(config, "aborted", lang or "en"))
    vote = Vote(ABORTED, "breaker", 0, ABORTED, text, code=ABORTED)
    return Decision("breaker", (vote,), text, tool, call_id, 0, turn, run_id, detector=ABORTED)


def is_aborted(decision: Decision) -> bool:
    """True for the answer to a call made after a breaker in the same batch."""
    return decision.detector == ABORTED


def note_shown(decision: Decision) -> bool:
    """Whether the decision's message is appended to a tool result the model sees."""
    if not decision.message:
        return False
    return decision.action == "breaker" or (decision.action == "warn" and decision.notify)


def _status(status: str, **fields: Any) -> str:
    return json.dumps({"status": status, **fields}, ensure_ascii=False)


def tool_result(decision: Decision) -> str | None:
    """The tool-result text for a call the guard did not let run; None when it may run."""
    if not decision.blocked:
        return None
    if is_aborted(decision):
        return _status("aborted", message=decision.message or "")
    top = decision.top
    status = "error" if decision.action == "breaker" else "blocked"
    return _status(
        status,
        reason="tool-loop",
        detector=decision.detector,
        count=top.count if top else 0,
        message=decision.message or "",
    )


def result_text(value: Any) -> str:
    """A tool's result as the model sees it: a string as is, anything else as JSON; odd or
    hostile values never raise."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except Exception:  # noqa: BLE001 — NaN-free JSON of stand-ins (huge ints, raising __str__ …)
        return canonical_text(value)


def error_result(error: str) -> str:
    """The tool-result text for a tool that failed (raised, or got unusable arguments)."""
    return _status("error", error=error)


def with_notes(content: str, decisions: Iterable[Decision]) -> str:
    """`content` followed by every note the model should see (see `note_shown`)."""
    notes = [d.message for d in decisions if note_shown(d) and d.message]
    return "\n\n".join([content, *notes]) if notes else content


def stop_text(model_text: str | None, decision: Decision) -> str:
    """The final answer when a breaker ends a turn: the model's text, else the guard's message."""
    parts = ((model_text or "").strip(), decision.message or "")
    return "\n\n".join(t for t in parts if t)
