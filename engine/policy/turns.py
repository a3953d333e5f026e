"""Required tools per turn: which tool the model must call, the retries, the argument matchers,
and the keyword sets and conditions that pick the intent.

`TurnPolicy` is compiled once from a rules dict and is immutable (safe to share between
threads); the mutable part of a turn lives in a `TurnState` owned by one session. How the
user text and the context are read off the messages, and what the matchers of
`require.args` accept, is documented in docs/turns.md. A `regex` matcher is a user pattern,
at most `MAX_PATTERN_CHARS` long; the matchers of one call share one deadline, and a
timed-out search counts as no match.

All keyword sets are compiled into one Aho-Corasick automaton (`KeywordIndex`): each
distinct normalised keyword maps to a bit mask of the sets it belongs to, so one pass over
a text yields the mask of every set it contains, whatever the number of keywords; `text_equals`
is a dict lookup of the whole normalised text (`turn.normalize` applies to keywords and texts
alike). Conditions (docs/turns.md) compile to closures over the masks of a `Probe`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ahocorasick_rs

from loopguard.errors import rules_error
from loopguard.rules import CONDITION_LEAVES, default
from loopguard.state.turn import RoundOutcome, TurnExpectation, TurnState, matcher
from loopguard.text.content import content_text, strip_recall
from loopguard.text.messages import render
from loopguard.text.normalize import Normalizer
from loopguard.text.regexcheck import Deadline, compiled_or_none, search

_OPERATORS = f"all, any, not, {', '.join(CONDITION_LEAVES)}"
Condition = Callable[["Probe", "Probe"], bool]  # cond(text_probe, context_probe) -> bool


@dataclass(frozen=True, slots=True)
class KeywordHit:
    """One keyword occurrence; `start`/`end` are character offsets in the normalised text."""

    keyword: str
    sets: tuple[str, ...]
    start: int
    end: int


class KeywordIndex:
    """All keyword sets of a config in one automaton; immutable and thread-safe once built."""

    def __init__(
        self,
        keyword_sets: Mapping[str, Sequence[str]],
        normalize: Iterable[str] = ("strip", "lower"),
    ) -> None:
        self.normalize = Normalizer(normalize)
        self.names: tuple[str, ...] = tuple(keyword_sets)
        self._bits = {name: 1 << i for i, name in enumerate(self.names)}
        masks: dict[str, int] = {}
        self._exact: dict[str, int] = {}
        for name, keywords in keyword_sets.items():
            where = f"keyword_sets.{name}"
            if not isinstance(keywords, (list, tuple)):
                raise rules_error(f"keyword set {name!r} must be a list of strings", where)
            for i, keyword in enumerate(keywords):
                if not isinstance(keyword, str):
                    hint = "quote it in the YAML file"
                    raise rules_error(f"keyword {keyword!r} is not a string", f"{where}[{i}]", hint)
                norm = self.normalize(keyword)
                if norm:
                    masks[norm] = masks.get(norm, 0) | self._bits[name]
                    key = self.normalize.equality_key(norm)
                    self._exact[key] = self._exact.get(key, 0) | self._bits[name]
        self._patterns = list(masks)
        self._masks = list(masks.values())
        self._automaton = ahocorasick_rs.AhoCorasick(self._patterns) if self._patterns else None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> KeywordIndex:
        """Compile `keyword_sets` with the `turn.normalize` steps of a rules dict."""
        turn = config.get("turn") or {}
        steps = turn.get("normalize", default("turn.normalize"))
        return cls(config.get("keyword_sets") or {}, steps if steps is not None else [])

    def __len__(self) -> int:
        return len(self._patterns)

    def bits(self, names: str | Sequence[str], path: str) -> int:
        """The mask of one set name or a list of names; unknown names are a RulesError."""
        listed = [names] if isinstance(names, str) else names
        if not isinstance(listed, (list, tuple)) or not listed:
            raise rules_error("expected a keyword set name or a list of names", path)
        mask = 0
        for name in listed:
            if name not in self._bits:
                hint = f"define it under keyword_sets (known: {', '.join(self.names)})"
                raise rules_error(f"unknown keyword set {name!r}", path, hint)
            mask |= self._bits[name]
        return mask

    def contains_mask(self, normalised: str) -> int:
        """Mask of the sets with a keyword anywhere in an already-normalised text."""
        if self._automaton is None or not normalised:
            return 0
        mask, masks = 0, self._masks
        for index, _, _ in self._automaton.find_matches_as_indexes(normalised, overlapping=True):
            mask |= masks[index]
        return mask

    def equals_mask(self, normalised: str) -> int:
        """Mask of the sets having a keyword equal to the whole normalised text."""
        return self._exact.get(self.normalize.equality_key(normalised), 0)

    def find(self, text: str) -> list[KeywordHit]:
        """Every occurrence (overlapping) of every keyword in the normalised `text`."""
        norm = self.normalize(text)
        if self._automaton is None or not norm:
            return []
        hits = []
        for index, start, end in self._automaton.find_matches_as_indexes(norm, overlapping=True):
            mask = self._masks[index]
            sets = tuple(n for n in self.names if mask & self._bits[n])
            hits.append(KeywordHit(self._patterns[index], sets, start, end))
        return hits

    def compile(self, node: Any, path: str = "when") -> Condition:
        """Compile a condition tree into a closure; bad shapes raise RulesError naming `path`."""
        if not isinstance(node, Mapping) or len(node) != 1:
            raise rules_error(f"a condition is a mapping with exactly one key ({_OPERATORS})", path)
        ((op, arg),) = node.items()
        where = f"{path}.{op}"
        if op in ("all", "any"):
            if not isinstance(arg, list) or not arg:
                raise rules_error(f"'{op}' takes a non-empty list of conditions", where)
            parts = tuple(self.compile(sub, f"{where}[{i}]") for i, sub in enumerate(arg))
            if op == "all":
                return lambda t, c: all(part(t, c) for part in parts)
            return lambda t, c: any(part(t, c) for part in parts)
        if op == "not":
            inner = self.compile(arg, where)
            return lambda t, c: not inner(t, c)
        if op not in CONDITION_LEAVES:
            raise rules_error(f"unknown condition {op!r}", path, f"use {_OPERATORS}")
        bit = self.bits(arg, where)
        if op == "text_contains":
            return lambda t, c: bool(t.contains & bit)
        if op == "text_equals":
            return lambda t, c: bool(t.equals & bit)
        return lambda t, c: bool(c.contains & bit)


class Probe:
    """One text, normalised once; its masks are computed on first use and cached."""

    __slots__ = ("_index", "normalised", "_contains", "_equals")

    def __init__(self, index: KeywordIndex, text: str) -> None:
        self._index = index
        self.normalised = index.normalize(text)
        self._contains: int | None = None
        self._equals: int | None = None

    @property
    def contains(self) -> int:
        if self._contains is None:
            self._contains = self._index.contains_mask(self.normalised)
        return self._contains

    @property
    def equals(self) -> int:
        if self._equals is None:
            self._equals = self._index.equals_mask(self.normalised)
        return self._equals


# --- the turn policy --------------------------------------------------------------------


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
    max_tool_rounds: int
    max_retries: int
    context_messages: int
    keep_tag: str
    drop_tag: str
    texts: dict[str, Any]  # {"messages": ...} for render()

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
        text_probe = Probe(self.index, text)
        context_probe = Probe(self.index, self.context_text(messages))
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
            Probe(self.index, text), Probe(self.index, "")
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
