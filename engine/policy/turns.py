"""Required tools per turn (SPEC §4): which tool the model must call, and the retries.

`TurnPolicy` is compiled once from a rules dict and is immutable (safe to share between
threads); the mutable part of a turn lives in a `TurnState` owned by one session.

What is read from the messages (OpenAI-style dicts):
- a message's text is its `content` when that is a string, or the concatenation of the
  `text` fields of its parts when it is a list of parts (`{"type": "text", "text": ...}`;
  parts of other types, such as images, are skipped). Any other content (None, a dict, a
  number, tool calls only) counts as no text; a non-dict message is skipped;
- the user text is the newest `role: user` message with non-blank text, recall-stripped:
  only the last `<current-user-message>` section is kept, and `<relevant-memories>`
  sections are removed (tags from `turn.recall`);
- the context is the last `turn.context_messages` messages of the list without its last
  element, any role, each recall-stripped, joined by newlines.

Required arguments (`require.args`): each value is matched exactly, unless it is a mapping
with exactly one of these keys (see `arg_matches`): `{equals: V}` (exactly V, also for a
mapping V that would read as a matcher), `{prefix: "pytest"}` (a string starting with it),
`{regex: "^pytest\\b"}` (a string the `regex` pattern is found in, case-sensitive, at most
`MAX_PATTERN_CHARS` long, matched with a `REGEX_TIMEOUT_S` timeout) or `{any: true}` (present,
any value). A call of the required tool whose arguments do not match leaves the requirement
unmet, and the retry then says so (`retry_other_args`, `exhausted_other_args`).
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import regex

from loopguard.policy.intent import Condition, KeywordIndex, rules_error
from loopguard.text.messages import render
from loopguard.text.regexcheck import MATCH_TIMEOUT_S, Deadline, safe_compile, search
from loopguard.config.validate import MAX_PATTERN_CHARS

TEXT_PART_TYPES = (None, "text", "input_text", "output_text")
MATCH_KEYS = ("equals", "prefix", "regex", "any")
REGEX_TIMEOUT_S = MATCH_TIMEOUT_S  # per search; the matchers of one call share CALL_BUDGET_S


def content_text(message: Any) -> str:
    """The text of one message as described in the module docstring."""
    if not isinstance(message, Mapping):
        return ""
    return parts_text(message.get("content"))


def parts_text(content: Any) -> str:
    """A message content's text: a string as is, or its text parts joined with nothing between.

    The one rule for runtime and replay alike: a model's or a user's message split into
    parts (`帮我看看` + `持仓`) reads as the text it was split from.
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content
                 if isinstance(p, Mapping) and p.get("type") in TEXT_PART_TYPES]
        return "".join(p for p in parts if isinstance(p, str))
    return ""


def strip_recall(text: str, keep_tag: str, drop_tag: str) -> str:
    """Keep the last `<keep_tag>` section if any; drop every `<drop_tag>` section."""
    opening = re.compile(f"<{re.escape(keep_tag)}>", re.IGNORECASE)
    starts = [m.end() for m in opening.finditer(text)]
    if starts:
        rest = text[starts[-1]:]
        close = re.search(f"</{re.escape(keep_tag)}>", rest, re.IGNORECASE)
        text = rest[: close.start()] if close else rest
    drop = re.escape(drop_tag)
    text = re.sub(f"<{drop}>.*?(</{drop}>|$)", "", text, flags=re.IGNORECASE | re.DOTALL)
    return text


def matcher(spec: Any) -> tuple[str, Any] | None:
    """`(kind, operand)` when a required value is a matcher mapping, None for an exact value."""
    if isinstance(spec, Mapping) and len(spec) == 1:
        ((kind, operand),) = spec.items()
        if kind in MATCH_KEYS:
            return kind, operand
    return None


@functools.lru_cache(maxsize=256)
def _pattern(source: str) -> Any:
    """The compiled pattern, or None when it is too long or does not compile (lint says so)."""
    if len(source) > MAX_PATTERN_CHARS:
        return None
    try:
        return safe_compile(source)
    except (regex.error, ValueError, OverflowError):
        return None


def arg_matches(spec: Any, present: bool, value: Any, deadline: Deadline | None = None) -> bool:
    """Whether one given argument (`present`, `value`) meets one required value `spec`."""
    if not present:
        return False
    found = matcher(spec)
    if found is None:
        return bool(value == spec)
    kind, operand = found
    if kind == "equals":
        return bool(value == operand)
    if kind == "any":
        return operand is True
    if not isinstance(value, str) or not isinstance(operand, str):
        return False
    if kind == "prefix":
        return value.startswith(operand)
    compiled = _pattern(operand)  # a timed-out search (pathological pattern or argument): no match
    return compiled is not None and search(compiled, value, deadline) is not None


def args_match(required: Mapping[str, Any], given: Any) -> bool:
    """Whether a call's arguments meet every required argument."""
    given = given if isinstance(given, Mapping) else {}
    deadline = Deadline()  # the regex matchers of one call share CALL_BUDGET_S
    return all(arg_matches(spec, key in given, given.get(key), deadline)
               for key, spec in required.items())


def _shown(spec: Any) -> str:
    found = matcher(spec)
    if found is None:
        return json.dumps(spec, ensure_ascii=False, default=str)
    kind, operand = found
    text = json.dumps(operand, ensure_ascii=False, default=str)
    if kind == "equals":
        return text
    if kind == "prefix":
        return f"<text starting with {text}>"
    if kind == "regex":
        return f"<text matching /{operand}/>"
    return "<any value>"


def format_call(tool: str, args: Mapping[str, Any]) -> str:
    """The call to make, e.g. `portfolio(mode="diagnose")` or `run_shell(command=<text
    starting with "pytest">)` for a non-exact requirement."""
    shown = ", ".join(f"{k}={_shown(v)}" for k, v in args.items())
    return f"{tool}({shown})"


@dataclass(frozen=True)
class TurnExpectation:
    """The tool the model must call this turn, with the argument values it must pass."""

    rule: str
    tool: str
    args: dict[str, Any]
    reason: str

    @property
    def call(self) -> str:
        return format_call(self.tool, self.args)


@dataclass(frozen=True)
class RoundOutcome:
    """After a round without tool calls: `retry` (send `message` as a user turn) or `finish`."""

    action: str  # "retry" | "finish"
    message: str | None  # the user-role retry text (retry only)
    text: str | None  # the assistant text; on an exhausted finish, prefixed with the warning
    problem: str | None  # "no_output" | "plan_only" | "text_only" | "other_args" when unmet
    retries: int  # retries used this turn so far
    exhausted: bool = False
    expectation: TurnExpectation | None = None


@dataclass
class TurnState:
    """One session's mutable turn state (guarded by the session's lock)."""

    expectation: TurnExpectation | None = None
    retries: int = 0
    satisfied: bool = False
    tools_closed: bool = False
    rounds: int = 0  # rounds ended through finish_round
    user_text: str = ""
    other_args: bool = False  # the required tool ran this turn, only with other arguments


@dataclass(frozen=True)
class _Intent:
    id: str
    when: Condition
    tool: str
    args: dict[str, Any]
    reason: str


@dataclass(frozen=True, eq=False)
class TurnPolicy:
    """The compiled `turn`, `keyword_sets`, `intents` and `messages` blocks of a rules dict."""

    index: KeywordIndex
    intents: tuple[_Intent, ...]
    plan_condition: Condition | None
    max_tool_rounds: int = 15
    max_retries: int = 2
    context_messages: int = 4
    keep_tag: str = "current-user-message"
    drop_tag: str = "relevant-memories"
    texts: dict[str, Any] = field(default_factory=dict)  # {"messages": ...} for render()

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> TurnPolicy:
        index = KeywordIndex.from_config(config)
        turn = config.get("turn") or {}
        recall = turn.get("recall") or {}
        intents = []
        for i, raw in enumerate(config.get("intents") or []):
            intents.append(_compile_intent(index, raw, i))
        plan = turn.get("plan_condition")
        return cls(
            index=index,
            intents=tuple(intents),
            plan_condition=index.compile(plan, "turn.plan_condition") if plan else None,
            max_tool_rounds=_count(turn, "max_tool_rounds", 15),
            max_retries=_count(turn, "max_incomplete_tool_retries", 2),
            context_messages=_count(turn, "context_messages", 4),
            keep_tag=str(recall.get("keep_tag", "current-user-message")),
            drop_tag=str(recall.get("drop_tag", "relevant-memories")),
            texts={"messages": copy.deepcopy(config.get("messages") or {})},
        )

    def _strip(self, text: str) -> str:
        return strip_recall(text, self.keep_tag, self.drop_tag) if "<" in text else text

    def new_state(self) -> TurnState:
        return TurnState()

    def user_text(self, messages: Sequence[Any]) -> str:
        """The recall-stripped text of the newest user message with non-blank text."""
        for message in reversed(messages):
            if isinstance(message, Mapping) and message.get("role") == "user":
                text = self._strip(content_text(message))
                if text.strip():
                    return text
        return ""

    def context_text(self, messages: Sequence[Any]) -> str:
        """The last `context_messages` messages before the last one, joined by newlines."""
        if self.context_messages <= 0:
            return ""
        window = list(messages[:-1])[-self.context_messages:]
        texts = (self._strip(content_text(m)) for m in window)
        return "\n".join(t for t in texts if t)

    def expectation_for(self, messages: Sequence[Any], text: str | None = None
                        ) -> TurnExpectation | None:
        """The first intent whose condition holds, as a TurnExpectation (no state change)."""
        text = self.user_text(messages) if text is None else text
        if not text:
            return None
        text_probe = self.index.probe(text)
        context_probe = self.index.probe(self.context_text(messages))
        for intent in self.intents:
            if intent.when(text_probe, context_probe):
                return TurnExpectation(intent.id, intent.tool, dict(intent.args), intent.reason)
        return None

    def begin_turn(self, state: TurnState, messages: Any, tools: Iterable[str] | None = None
                   ) -> TurnExpectation | None:
        """Reset `state` for a new turn and return what the model must call, if anything.

        `tools` names the tools the agent offers this turn (None: unknown, so every tool
        counts as offered). A required tool the agent does not offer is no requirement.
        """
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            messages = []
        state.user_text = self.user_text(messages)
        expectation = self.expectation_for(messages, state.user_text)
        names = offered_names(tools)
        if expectation is not None and names is not None and expectation.tool not in names:
            expectation = None
        state.expectation = expectation
        state.retries, state.rounds = 0, 0
        state.satisfied = state.tools_closed = state.other_args = False
        return state.expectation

    def observe_call(self, state: TurnState, tool: str, args: Any, ran: bool) -> bool:
        """Mark the requirement met by a call that ran (was not blocked); returns `satisfied`.

        A call counts when it ran, even if the tool then raised: the model did what was
        asked. A blocked call (critical or breaker) never counts.
        """
        exp = state.expectation
        if ran and exp is not None and not state.satisfied and tool == exp.tool:
            if args_match(exp.args, args):
                state.satisfied = True
            else:
                state.other_args = True
        return state.satisfied

    def note_breaker(self, state: TurnState) -> None:
        """A breaker cut the round short: tools are closed until a retry re-opens them."""
        state.tools_closed = True

    def problem(self, text: str | None, other_args: bool = False) -> str:
        """What went wrong in a round that skipped the required call."""
        if other_args:
            return "other_args"
        if not text or not text.strip():
            return "no_output"
        if self.plan_condition and self.plan_condition(self.index.probe(text), self.index.probe("")):
            return "plan_only"
        return "text_only"

    def finish_round(self, state: TurnState, text: str | None) -> RoundOutcome:
        """After a round without tool calls (or cut short by a breaker): retry or finish."""
        state.rounds += 1
        exp = state.expectation
        if exp is None or state.satisfied:
            return RoundOutcome("finish", None, text, None, state.retries, expectation=exp)
        problem = self.problem(text, state.other_args)
        lang_text = state.user_text or text or ""
        if state.retries < self.max_retries:
            state.retries += 1
            state.tools_closed = False  # the retry asks for a call, so tools are offered again
            message = render(self.texts, "retry", lang_text,
                             problem=render(self.texts, f"retry_{problem}", lang_text,
                                            tool=exp.tool, call=exp.call),
                             reason=exp.reason, call=exp.call, tool=exp.tool)
            return RoundOutcome("retry", message, text, problem, state.retries, expectation=exp)
        key = "exhausted_other_args" if state.other_args else "exhausted"
        warning = render(self.texts, key, lang_text, tool=exp.tool,
                         retries=state.retries, call=exp.call)
        final = f"{warning}\n\n{text}" if text and text.strip() else warning
        return RoundOutcome("finish", None, final, problem, state.retries, True, exp)


def offered_names(tools: Any) -> frozenset[str] | None:
    """The tool names an agent offers, from a name, an iterable of names or a mapping's keys.

    None (or anything that is not a name or an iterable) means unknown; entries that are
    not strings are ignored, so bad input never raises.
    """
    if tools is None:
        return None
    if isinstance(tools, str):
        return frozenset((tools,))
    if isinstance(tools, (bytes, bytearray)):
        return None
    try:
        return frozenset(t for t in tools if isinstance(t, str))
    except TypeError:
        return None


def _count(block: Mapping[str, Any], key: str, default: int) -> int:
    value = block.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise rules_error(f"{key} must be a whole number >= 0, got {value!r}", f"turn.{key}")
    return value


def _check_matcher(spec: Any, path: str) -> None:
    """A matcher with a bad operand is a RulesError (lint reports it with its position)."""
    found = matcher(spec)
    if found is None:
        return
    kind, operand = found
    if kind in ("prefix", "regex") and not isinstance(operand, str):
        raise rules_error(f"'{kind}' takes a string, got {operand!r}", path)
    if kind == "any" and operand is not True:
        raise rules_error("'any' takes true", path, "write {any: true}, or drop the argument")
    if kind == "regex" and _pattern(operand) is None:
        raise rules_error("pattern is too long or does not compile", f"{path}.regex",
                          "fix the regular expression (regex syntax)")


def _compile_intent(index: KeywordIndex, raw: Any, position: int) -> _Intent:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("id"), str):
        raise rules_error("an intent is a mapping with a string 'id'", f"intents[{position}]")
    where = f"intents[{raw['id']}]"
    require = raw.get("require")
    if not isinstance(require, Mapping) or not isinstance(require.get("tool"), str):
        raise rules_error("'require' must give a 'tool' name", f"{where}.require")
    args = require.get("args") or {}
    if not isinstance(args, Mapping):
        raise rules_error("'require.args' must be a mapping", f"{where}.require.args")
    for name, spec in args.items():
        _check_matcher(spec, f"{where}.require.args.{name}")
    if "when" not in raw:
        raise rules_error("an intent needs a 'when' condition", f"{where}.when")
    reason = raw.get("reason", "")
    return _Intent(raw["id"], index.compile(raw["when"], f"{where}.when"), require["tool"],
                   dict(args), reason if isinstance(reason, str) else str(reason))
