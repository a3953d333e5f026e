"""Reader of Claude Code session files (`~/.claude/projects/<project>/<session>.jsonl`).

Claude Code writes one JSON line per event, and one line per content block
of a model response. The lines it reads:

- `type: "assistant"`: `message.id` names the response, `message.content`
  holds its blocks: `text` (the reply text) and `tool_use` (`id`, `name`,
  `input`: the calls); `thinking` blocks are ignored. Lines of one
  `message.id` are one response, even with tool results written between
  them (the tools run while the response is still being written).
- `type: "user"`: `message.content` as text (a user message, one turn), or
  blocks: `tool_result` (`tool_use_id`, `content`, `is_error`) answers a
  call (results written late, after the next response began, go back next
  to their call); a line with results starts no turn.
- `type: "system"` with `subtype: "compact_boundary"`: a context compaction
  (the summary that follows, `isCompactSummary`, is a user message).
- `isSidechain: true` lines belong to a sub-agent: a sub-agent file (every
  line a sidechain) is a session of its own; sidechain lines inside a main
  session file form a second session.

Sessions are named by what the lines say: the main one by its `sessionId`, a
sub-agent's by `<sessionId>/agent-<agentId>` (its lines carry the parent's
`sessionId`); sidechain lines without an `agentId` are `<main> (sidechain)`.
A file whose lines carry no `sessionId` is named after its path.

Bookkeeping lines (`progress`, `file-history-snapshot`, `queue-operation`,
`summary`, other `system` subtypes) carry no calls and are skipped.
"""

from __future__ import annotations

from typing import Any

from loopguard.findings import Finding
from loopguard.replay.transcripts.anthropic import tool_result, tool_uses
from loopguard.replay.transcripts.events import Context, Stream, Transcript, transcript_text
from loopguard.replay.transcripts.regroup import Regrouper
from loopguard.replay.transcripts.source import json_lines

NAME = "claude-code"
LABEL = "Claude Code session"
MARKERS = r'"isSidechain"\s*:|"parentUuid"\s*:|"type"\s*:\s*"file-history-snapshot"'
_SKIPPED = frozenset({"progress", "file-history-snapshot", "queue-operation", "summary", "system"})


class _Sessions:
    """The main session of a file and, if sidechain lines appear in it, the sidechain ones."""

    def __init__(self, fallback: str) -> None:
        self.fallback = fallback  # the file's name, for lines that carry no session id
        self.name: str | None = None  # the file's own session: named by its first line
        self.main_sidechain: bool | None = None  # isSidechain of the first conversational line
        self.groups: dict[str, Regrouper] = {}

    def session(self, obj: dict[str, Any]) -> str:
        side = bool(obj.get("isSidechain"))
        ident = _text_id(obj.get("sessionId"))
        agent = _text_id(obj.get("agentId")) if side else None
        if self.main_sidechain is None:
            self.main_sidechain = side
        if self.name is None:
            self.name = (
                f"{ident or self.fallback}/agent-{agent}" if agent else ident or self.fallback
            )
        if agent:
            return f"{ident or self.fallback}/agent-{agent}"
        return self.name if side == self.main_sidechain else f"{self.name} (sidechain)"

    def group(self, session: str) -> Regrouper:
        return self.groups.setdefault(session, Regrouper())


def _text_id(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def read(transcript: Transcript) -> Stream:
    """Events of one Claude Code session file, in the order the model produced them."""
    source = transcript.source
    sessions = _Sessions(source.default_session)
    ctx = Context(sessions.fallback, source.name, 0)
    for item in json_lines(source):
        if isinstance(item, Finding):
            yield item
            continue
        ctx.line, obj = item
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            yield ctx.warning("not a Claude Code line (no `type`); skipped", "bad-message")
            continue
        yield from _line(obj, sessions, ctx)
    for group in sessions.groups.values():
        yield from group.flush()


def _line(obj: dict[str, Any], sessions: _Sessions, ctx: Context) -> Stream:
    kind = obj["type"]
    if kind == "system" and obj.get("subtype") == "compact_boundary":
        ctx.session = sessions.session(obj)
        yield from sessions.group(ctx.session).flush()
        yield ctx.compaction()
        return
    if kind in _SKIPPED:
        return
    message = obj.get("message")
    if kind not in ("user", "assistant") or not isinstance(message, dict):
        if kind in ("user", "assistant"):
            yield ctx.warning(f"{kind} line without a `message` object; skipped", "bad-message")
        return
    ctx.session = sessions.session(obj)
    group = sessions.group(ctx.session)
    content = message.get("content")
    if kind == "assistant":
        yield from _assistant(message, content, group, ctx)
    else:
        yield from _user(content, group, ctx)


def _assistant(message: dict[str, Any], content: Any, group: Regrouper, ctx: Context) -> Stream:
    blocks = (
        content
        if isinstance(content, list)
        else [{"type": "text", "text": transcript_text(content)}]
    )
    calls, notes = tool_uses(blocks, ctx)
    yield from notes
    key = message.get("id")
    yield from group.part(
        str(key) if key else f"line{ctx.line}", ctx, transcript_text(blocks), calls
    )


def _user(content: Any, group: Regrouper, ctx: Context) -> Stream:
    blocks = content if isinstance(content, list) else []
    results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
    if not results:
        yield from group.flush()
        yield ctx.user(transcript_text(content))
        return
    for block in results:
        yield from group.result(tool_result(block, ctx))
