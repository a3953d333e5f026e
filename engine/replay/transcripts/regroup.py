"""Putting a model response back together when its parts arrive one by one.

Some agents log a response piece by piece and run its tools while it is
still being logged: Claude Code writes one line per content block (lines of
one `message.id`, with tool results in between), OpenHands one event per
action (actions of one `model_response.id`, each followed by its
observation). The replay needs one `AssistantMessage` per response carrying
all its calls, so a round's parallel calls stay one batch, followed by their
results.

`Regrouper` holds the responses still open, keyed by their id: parts with
the open response's id are added to it; a result joins the response that
made the call, even one written late, after the next response began. A
response is released (its message, then its results) once a newer one has
started and all its calls are answered; `flush()` releases everything
before an event that is not part of a response (a user message, a
compaction) and at the end. At most `limit` responses are held, so memory
stays bounded on files where results never come.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from loopguard.replay.transcripts.events import Context, Event, ToolCall, ToolResult


@dataclass
class _Reply:
    key: str
    where: Context  # where the response began
    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    answered: set[str] = field(default_factory=set)

    def complete(self) -> bool:
        return all(call.id in self.answered for call in self.calls)

    def events(self) -> Iterator[Event]:
        yield self.where.reply("\n".join(t for t in self.texts if t), tuple(self.calls))
        yield from self.results


class Regrouper:
    """Open responses, oldest first; see the module docstring."""

    def __init__(self, limit: int = 64) -> None:
        self.limit = limit
        self._open: list[_Reply] = []

    def part(
        self, key: str, ctx: Context, text: str = "", calls: tuple[ToolCall, ...] = ()
    ) -> Iterator[Event]:
        """Add text and calls of the response `key` (a new key starts a new response at `ctx`)."""
        newest = self._open[-1] if self._open else None
        if newest is None or newest.key != key:
            newest = _Reply(key, replace(ctx))
            self._open.append(newest)
            yield from self._release()
        if text:
            newest.texts.append(text)
        newest.calls.extend(calls)

    def result(self, result: ToolResult) -> Iterator[Event]:
        """A tool result: joins the response that made the call, or passes straight through."""
        for reply in reversed(self._open):
            if (
                any(call.id == result.call_id for call in reply.calls)
                and result.call_id not in reply.answered
            ):
                reply.results.append(result)
                reply.answered.add(result.call_id)
                yield from self._release()
                return
        yield result

    def flush(self) -> Iterator[Event]:
        """Release every held response, answered or not."""
        replies, self._open = self._open, []
        for reply in replies:
            yield from reply.events()

    def _release(self) -> Iterator[Event]:
        while len(self._open) > 1 and (self._open[0].complete() or len(self._open) > self.limit):
            yield from self._open.pop(0).events()
