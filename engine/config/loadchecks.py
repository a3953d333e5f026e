"""Meaning checks over a merged rules document (what a schema cannot say).

`load_checks` finds what makes rules unusable, so loading fails on it too:
- a condition naming a keyword set that is not defined (`undefined-set`);
- `aggregator.order` naming a detector that does not exist (`unknown-detector`);
- a pattern in a detector option marked as a regex (the unknown-tool
  patterns) that does not compile with `regex`, or is longer than
  `MAX_PATTERN_CHARS` (`bad-regex`).

The lint-only checks live one per module in `loopguard.lint.checks`; the walks
they share (`scopes`, `conditions`, `set_references`, `repeats`) are here.

Example (fails): `when: {text_contains: portfolio_veiw}` -> "undefined keyword set
'portfolio_veiw' (did you mean 'portfolio_view'?)".
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import regex

from loopguard.config.positions import Path, PositionIndex
from loopguard.config.schema import Assembly, regex_options
from loopguard.findings import Finding
from loopguard.rules import default
from loopguard.text.hints import did_you_mean
from loopguard.text.normalize import NORMALIZE_STEPS, Normalizer
from loopguard.text.regexcheck import MAX_PATTERN_CHARS

LEAVES = ("text_contains", "text_equals", "context_contains")


def scopes(data: dict[str, Any]) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The global blocks (prefix `()`) and each agent's block (prefix `agents.A`)."""
    yield (), data
    agents = data.get("agents")
    if isinstance(agents, dict):
        for name, block in agents.items():
            if isinstance(block, dict):
                yield ("agents", name), block


def conditions(block: dict[str, Any], prefix: Path) -> Iterator[tuple[Path, Any]]:
    """Every condition tree of one scope: `turn.plan_condition` and each intent's `when`."""
    turn = block.get("turn")
    if isinstance(turn, dict) and "plan_condition" in turn:
        yield prefix + ("turn", "plan_condition"), turn["plan_condition"]
    intents = block.get("intents")
    if isinstance(intents, list):
        for i, intent in enumerate(intents):
            if isinstance(intent, dict) and "when" in intent:
                yield prefix + ("intents", i, "when"), intent["when"]


def set_references(path: Path, tree: Any) -> Iterator[tuple[Path, str]]:
    """Every keyword-set name a condition tree uses, with its path (iterative walk)."""
    stack = [(path, tree)]
    while stack:
        here, node = stack.pop()
        if not isinstance(node, dict):
            continue
        for op, arg in node.items():
            if op in ("all", "any") and isinstance(arg, list):
                stack.extend((here + (op, i), part) for i, part in enumerate(arg))
            elif op == "not":
                stack.append((here + (op,), arg))
            elif op in LEAVES and isinstance(arg, str):
                yield here + (op,), arg
            elif op in LEAVES and isinstance(arg, list):
                yield from ((here + (op, i), n) for i, n in enumerate(arg) if isinstance(n, str))


def used_sets(data: dict[str, Any]) -> set[str]:
    """Names of every keyword set any condition of any scope refers to."""
    return {
        name
        for prefix, block in scopes(data)
        for path, tree in conditions(block, prefix)
        for _, name in set_references(path, tree)
    }


def _sets_of(data: dict[str, Any], block: dict[str, Any]) -> set[str]:
    names = set(data.get("keyword_sets") or {})
    if block is not data:
        names |= set(block.get("keyword_sets") or {})
    return names


def load_checks(data: dict[str, Any], index: PositionIndex, assembly: Assembly) -> list[Finding]:
    """Errors that make the merged rules unusable (see the module docstring)."""
    found: list[Finding] = []
    # without a registry, the ids known are those the rules name (bundled ones included)
    named = {*(data.get("detectors") or {}), *(default("aggregator.order") or ())}
    known = set(assembly.detector_ids) if assembly.closed else named
    for prefix, block in scopes(data):
        defined = _sets_of(data, block)
        for path, tree in conditions(block, prefix):
            for where, name in set_references(path, tree):
                if name not in defined:
                    found.append(
                        index.finding(
                            data,
                            where,
                            "error",
                            f"undefined keyword set {name!r}{did_you_mean(name, defined)}",
                            "define it under keyword_sets, or fix the name",
                            "undefined-set",
                        )
                    )
        order = (block.get("aggregator") or {}).get("order") or []
        for i, ident in enumerate(order):
            if isinstance(ident, str) and ident not in known:
                found.append(
                    index.finding(
                        data,
                        prefix + ("aggregator", "order", i),
                        "error",
                        f"unknown detector {ident!r}{did_you_mean(ident, known)}",
                        f"detectors: {', '.join(sorted(known))}",
                        "unknown-detector",
                    )
                )
        found.extend(_pattern_findings(data, block, prefix, index, assembly))
    return found


def user_patterns(
    block: dict[str, Any], prefix: Path, assembly: Assembly
) -> Iterator[tuple[Path, str]]:
    """(path, pattern) of every detector option in one scope that holds a user regex
    (`schema.regex_options`: what each detector marks in its options schema)."""
    detectors = block.get("detectors")
    for ident, option, many in regex_options(assembly):
        options = detectors.get(ident) if isinstance(detectors, dict) else None
        value = options.get(option) if isinstance(options, dict) else None
        path = prefix + ("detectors", ident, option)
        if many and isinstance(value, list):
            yield from ((path + (i,), p) for i, p in enumerate(value) if isinstance(p, str))
        elif not many and isinstance(value, str):
            yield path, value


def _pattern_findings(
    data: dict[str, Any],
    block: dict[str, Any],
    prefix: Path,
    index: PositionIndex,
    assembly: Assembly,
) -> list[Finding]:
    found: list[Finding] = []
    for path, pattern in user_patterns(block, prefix, assembly):
        if len(pattern) > MAX_PATTERN_CHARS:
            found.append(
                index.finding(
                    data,
                    path,
                    "error",
                    f"pattern is {len(pattern)} characters long (at most {MAX_PATTERN_CHARS})",
                    "shorten the pattern; long patterns can be slow to match",
                    "bad-regex",
                )
            )
            continue
        try:
            regex.compile(pattern, regex.IGNORECASE)
        except (regex.error, ValueError, OverflowError) as exc:
            found.append(
                index.finding(
                    data,
                    path,
                    "error",
                    f"pattern does not compile: {exc}",
                    "fix the regular expression (regex syntax)",
                    "bad-regex",
                )
            )
    return found


def normaliser(data: dict[str, Any]) -> Any:
    """The keyword normalisation the rules configure: the runtime's own `Normalizer`, so two
    keywords lint calls the same are the ones the matcher cannot tell apart (`plan` and
    `ＰＬＡＮ` under `nfkc` + `lower`). Unknown steps are left to the schema check."""
    steps = (data.get("turn") or {}).get("normalize")
    if not isinstance(steps, list):
        steps = []
    return Normalizer([s for s in steps if s in NORMALIZE_STEPS])


def repeats(items: Any, norm: Any) -> Iterator[tuple[int, Any, int]]:
    """(index, item, index of its first occurrence) of each string item seen before."""
    first: dict[str, int] = {}
    for i, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, str):
            continue
        key = norm(item)
        if not key.strip():
            continue
        if key in first:
            yield i, item, first[key]
        else:
            first[key] = i
