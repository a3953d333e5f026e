"""Required tools per turn: which tool the model must call, the retries, the argument matchers.

`TurnPolicy` is compiled once from a rules dict and is immutable (safe to share between
threads); the mutable part of a turn lives in a `TurnState` owned by one session. How the
user text and the context are read off the messages, and what the matchers of
`require.args` accept, is documented in docs/turns.md. A `regex` matcher is a user pattern,
at most `MAX_PATTERN_CHARS` long; the matchers of one call share one deadline, and a
timed-out search counts as no match.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopguard.errors import rules_error
from loopguard.policy.intent import Condition, KeywordIndex
from loopguard.rules import default
from loopguard.state.turn import RoundOutcome, TurnExpectation, TurnState, matcher
from loopguard.text.content import content_text, strip_recall
from loopguard.text.messages import render
from loopguard.text.regexcheck import Deadline, compiled_or_none, search


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
        intents = [
            _compile_intent(index, raw, i) for i, raw in enumerate(config.get("intents") or [])
        ]
        plan = turn.get("plan_condition")
        return cls(
            index=index,
            intents=tuple(intents),
            plan_condition=index.compile(plan, "turn.plan_condition") if plan else None,
            max_tool_rounds=_count(turn, "max_tool_rounds"),
            max_retries=_count(turn, "max_incomplete_tool_retries"),
            context_messages=_count(turn, "context_messages"),
            keep_tag=str(recall.get("keep_tag", default("turn.recall.keep_tag"))),
            drop_tag=str(recall.get("drop_tag", default("turn.recall.drop_tag"))),
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
        window = list(messages[:-1])[-self.context_messages :]
        texts = (self._strip(content_text(m)) for m in window)
        return "\n".join(t for t in texts if t)

    def expectation_for(
        self, messages: Sequence[Any], text: str | None = None
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

    def begin_turn(
        self, state: TurnState, messages: Any, tools: Iterable[str] | None = None
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
        state.retries = 0
        state.satisfied = state.other_args = False
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

    def problem(self, text: str | None, other_args: bool = False) -> str:
        """What went wrong in a round that skipped the required call."""
        if other_args:
            return "other_args"
        if not text or not text.strip():
            return "no_output"
        if self.plan_condition and self.plan_condition(
            self.index.probe(text), self.index.probe("")
        ):
            return "plan_only"
        return "text_only"

    def finish_round(self, state: TurnState, text: str | None) -> RoundOutcome:
        """After a round without tool calls (or cut short by a breaker): retry or finish."""
        exp = state.expectation
        if exp is None or state.satisfied:
            return RoundOutcome("finish", None, text, None, state.retries, expectation=exp)
        problem = self.problem(text, state.other_args)
        lang_text = state.user_text or text or ""
        if state.retries < self.max_retries:
            state.retries += 1
            message = render(
                self.texts,
                "retry",
                lang_text,
                problem=render(
                    self.texts, f"retry_{problem}", lang_text, tool=exp.tool, call=exp.call
                ),
                reason=exp.reason,
                call=exp.call,
                tool=exp.tool,
            )
            return RoundOutcome("retry", message, text, problem, state.retries, expectation=exp)
        key = "exhausted_other_args" if state.other_args else "exhausted"
        warning = render(
            self.texts, key, lang_text, tool=exp.tool, retries=state.retries, call=exp.call
        )
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


def _count(block: Mapping[str, Any], key: str) -> int:
    value = block.get(key, default(f"turn.{key}"))
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise rules_error(f"{key} must be a whole number >= 0, got {value!r}", f"turn.{key}")
    return value


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
        check_matcher(spec, f"{where}.require.args.{name}")
    if "when" not in raw:
        raise rules_error("an intent needs a 'when' condition", f"{where}.when")
    reason = raw.get("reason", "")
    return _Intent(
        raw["id"],
        index.compile(raw["when"], f"{where}.when"),
        require["tool"],
        dict(args),
        reason if isinstance(reason, str) else str(reason),
    )


# --- required argument matchers (`require.args`) ----------------------------------------


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
    compiled = compiled_or_none(operand)  # a timed-out search: no match
    return compiled is not None and search(compiled, value, deadline) is not None


def args_match(required: Mapping[str, Any], given: Any) -> bool:
    """Whether a call's arguments meet every required argument."""
    given = given if isinstance(given, Mapping) else {}
    deadline = Deadline()  # the regex matchers of one call share CALL_BUDGET_S
    return all(
        arg_matches(spec, key in given, given.get(key), deadline) for key, spec in required.items()
    )


def check_matcher(spec: Any, path: str) -> None:
    """A matcher with a bad operand is a RulesError (lint reports it with its position)."""
    found = matcher(spec)
    if found is None:
        return
    kind, operand = found
    if kind in ("prefix", "regex") and not isinstance(operand, str):
        raise rules_error(f"'{kind}' takes a string, got {operand!r}", path)
    if kind == "any" and operand is not True:
        raise rules_error("'any' takes true", path, "write {any: true}, or drop the argument")
    if kind == "regex" and compiled_or_none(operand) is None:
        raise rules_error(
            "pattern is too long or does not compile",
            f"{path}.regex",
            "fix the regular expression (regex syntax)",
        )
