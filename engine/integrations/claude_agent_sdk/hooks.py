"""`loopguard_hooks()`: loopguard as Claude Agent SDK (Claude Code) hook callbacks.

- `UserPromptSubmit` → `begin_turn` with the prompt.
- `PreToolUse` → `before_call`. A blocked or aborted call is denied with the guard's tool
  result as the reason; a breaker also sets `continue: false` with the guard's text as the
  stop reason, since a deny alone does not stop a stubborn model. The calls from the first
  `PreToolUse` to the CLI's `PostToolBatch` are one batch (the calls of one response;
  `batches=False` makes every call a round of its own, for a CLI without that event).
- `PostToolUse` / `PostToolUseFailure` → `after_call` (result or error); a shown note goes
  back to the model as `additionalContext`; a breaker from a post-call detector stops too.
- `Stop` → `finish_round` with the last assistant text: a required-tool retry blocks the
  stop with the retry prompt as the reason; an exhausted retry's warning is shown to the
  user as a `systemMessage` (a hook cannot rewrite the final answer).
- `PreCompact` → `compacted()`; `PostToolBatch` ends the batch.

The session is Claude's `session_id`; a call made inside a sub-agent uses its `agent_id`
as the `run_id`, so concurrent sub-agents do not count as one another's repeats.
"""

from __future__ import annotations

import threading
from typing import Any

from claude_agent_sdk import HookMatcher

from loopguard.decision import Decision
from loopguard.integrations._core import GuardCore, _bound
from loopguard.session import answers
from loopguard.session.guard import Guard

Output = Any  # a HookJSONOutput (TypedDict), built as a plain dict


class ClaudeLoopGuard:
    """The hook callbacks, sharing one GuardCore (see the module docstring)."""

    def __init__(
        self,
        guard: Guard | None = None,
        *,
        agent: str | None = None,
        run_id: str | None = None,
        batches: bool = True,
    ) -> None:
        self.core = GuardCore(guard, agent, run_id)
        self.batches = batches
        self._lock = threading.Lock()
        self._batch: dict[str, bool] = {}  # session -> a PreToolUse batch is open

    def hooks(self) -> dict[str, list[HookMatcher]]:
        """The `hooks=` mapping for `ClaudeAgentOptions`."""
        return {
            "UserPromptSubmit": [HookMatcher(hooks=[self.user_prompt_submit])],
            "PreToolUse": [HookMatcher(hooks=[self.pre_tool_use])],
            "PostToolUse": [HookMatcher(hooks=[self.post_tool_use])],
            "PostToolUseFailure": [HookMatcher(hooks=[self.post_tool_use_failure])],
            "Stop": [HookMatcher(hooks=[self.stop])],
            "PreCompact": [HookMatcher(hooks=[self.pre_compact])],
            "PostToolBatch": [HookMatcher(hooks=[self.post_tool_batch])],
        }

    async def user_prompt_submit(self, data: Any, tool_use_id: str | None, context: Any) -> Output:
        sid = _sid(data)
        self._end_batch(sid)
        self.core.begin_turn(sid, [{"role": "user", "content": str(data.get("prompt") or "")}])
        return {}

    async def pre_tool_use(self, data: Any, tool_use_id: str | None, context: Any) -> Output:
        sid = _sid(data)
        with self._lock:
            opening = self.batches and not self._batch.get(sid)
            if opening:
                self._batch[sid] = True
                _bound(self._batch)
        if opening:
            self.core.begin_round(sid)
        decision = self.core.before(
            sid,
            str(data.get("tool_name") or ""),
            data.get("tool_input"),
            data.get("tool_use_id") or tool_use_id,
            data.get("agent_id"),
        )
        refused = answers.tool_result(decision)
        if refused is None:
            return {}
        out: Output = {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": refused,
            }
        }
        return self._stopping(out, decision)

    async def post_tool_batch(self, data: Any, tool_use_id: str | None, context: Any) -> Output:
        self._end_batch(_sid(data))
        return {}

    async def post_tool_use(self, data: Any, tool_use_id: str | None, context: Any) -> Output:
        return self._after("PostToolUse", data, tool_use_id, result=data.get("tool_response"))

    async def post_tool_use_failure(
        self, data: Any, tool_use_id: str | None, context: Any
    ) -> Output:
        error = str(data.get("error") or "error")
        return self._after("PostToolUseFailure", data, tool_use_id, error=error)

    def _after(self, event: str, data: Any, tool_use_id: str | None, **outcome: Any) -> Output:
        """Record the call a Post* hook input reports (`outcome`: result= or error=)."""
        decisions = self.core.after(
            _sid(data),
            str(data.get("tool_name") or ""),
            data.get("tool_input"),
            data.get("tool_use_id") or tool_use_id,
            run_id=data.get("agent_id"),
            **outcome,
        )
        return self._noted(event, decisions)

    async def stop(self, data: Any, tool_use_id: str | None, context: Any) -> Output:
        sid = _sid(data)
        self._end_batch(sid)
        text = data.get("last_assistant_message")
        text = text if isinstance(text, str) else None
        if self.core.closed(sid):
            ending = self.core.ending(sid, text)
            if ending.retry is not None:
                return {"decision": "block", "reason": ending.retry}
            return {}
        outcome = self.core.finish(sid, text)
        if outcome.action == "retry":
            return {"decision": "block", "reason": outcome.message or ""}
        final = outcome.text or ""
        if final != (text or ""):
            warning = (
                final[: len(final) - len(text)].strip() if text and final.endswith(text) else final
            )
            return {"systemMessage": warning}
        return {}

    async def pre_compact(self, data: Any, tool_use_id: str | None, context: Any) -> Output:
        self.core.session(_sid(data)).compacted()
        return {}

    # -- internals ---------------------------------------------------------------
    def _end_batch(self, sid: str) -> None:
        with self._lock:
            if self._batch.pop(sid, None):
                self.core.session(sid).end_round()

    def _noted(self, event: str, decisions: list[Decision]) -> Output:
        if not any(answers.note_shown(d) for d in decisions):
            return {}
        out: Output = {
            "hookSpecificOutput": {
                "hookEventName": event,
                "additionalContext": answers.with_notes("", decisions).strip(),
            }
        }
        breaker = next((d for d in decisions if d.action == "breaker"), None)
        return self._stopping(out, breaker) if breaker is not None else out

    @staticmethod
    def _stopping(out: Output, decision: Decision) -> Output:
        """A breaker ends the session's turn: `continue: false` with the guard's text."""
        if decision.action == "breaker":
            out["continue_"] = False
            out["stopReason"] = answers.stop_text(None, decision)
        return out


def loopguard_hooks(
    guard: Guard | None = None,
    *,
    agent: str | None = None,
    run_id: str | None = None,
    batches: bool = True,
) -> dict[str, list[HookMatcher]]:
    """The `hooks=` mapping for `ClaudeAgentOptions`, backed by a new ClaudeLoopGuard."""
    return ClaudeLoopGuard(guard, agent=agent, run_id=run_id, batches=batches).hooks()


def _sid(data: Any) -> str:
    """Claude's session id (always sent by the CLI; "default" keeps a malformed input harmless)."""
    return str(data.get("session_id") or "default")
