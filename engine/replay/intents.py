"""Why a tool was required: the intent and the keyword of the user's message that matched.

A skipped required tool is only actionable when the report says which rule
fired and on what words. The session's turn policy knows only the outcome,
so this looks the intent up in the effective rules (`session.config`) and
finds, with the same keyword automaton the matcher uses, the first keyword
of the user's text from a set the intent's `when` condition names.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from loopguard.errors import LoopguardError
from loopguard.policy.turns import KeywordIndex

_TEXT_LEAVES = ("text_contains", "text_equals")
_indexes: list[
    tuple[Any, KeywordIndex]
] = []  # (rules dict, its automaton): a few policies per process


def intent_rule(config: Any, intent: str) -> Mapping[str, Any] | None:
    """The `intents` entry with this id, as written in the effective rules."""
    for raw in (config.get("intents") or []) if isinstance(config, Mapping) else []:
        if isinstance(raw, Mapping) and raw.get("id") == intent:
            return raw
    return None


def condition_sets(node: Any, leaves: tuple[str, ...] = _TEXT_LEAVES) -> Iterator[str]:
    """The keyword set names a condition tree tests with the given leaves (outside `not`)."""
    if not isinstance(node, Mapping):
        return
    for op, arg in node.items():
        if op in ("all", "any") and isinstance(arg, list):
            for sub in arg:
                yield from condition_sets(sub, leaves)
        elif op in leaves and isinstance(arg, str):
            yield arg
        elif op in leaves and isinstance(arg, list):
            yield from (name for name in arg if isinstance(name, str))


def _index(config: Mapping[str, Any]) -> KeywordIndex:
    for known, index in _indexes:
        if known is config:
            return index
    index = KeywordIndex.from_config(config)
    _indexes.append((config, index))
    del _indexes[:-8]
    return index


def matched_keyword(config: Any, intent: str, text: str) -> tuple[str, str]:
    """(keyword, set) that made `intent` match `text`; ("", "") when it cannot be told."""
    rule = intent_rule(config, intent)
    if rule is None or not text or not isinstance(config, Mapping):
        return "", ""
    wanted = set(condition_sets(rule.get("when")))
    try:
        hits = _index(config).find(text)
    except (
        LoopguardError
    ):  # the rules loaded, so this is not expected; never break the replay for it
        return "", ""
    for hit in hits:
        for name in hit.sets:
            if name in wanted:
                return hit.keyword, name
    return "", ""
