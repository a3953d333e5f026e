"""What a check is given (`LintContext`) and the walks over rules that several checks share.

A check is a pure function of a `LintContext`: `data` is the merged document (every layer,
`builtin:default` first), `top` what the linted file itself wrote, `index` places a path of
`data` where it was written. `option_scopes` and `option_finding` serve a detector's own
checks (the plugin API).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from loopguard.config.schema import Assembly, regex_options
from loopguard.config.source import Path, PositionIndex, Repair, SourceDoc, effective_config
from loopguard.detection.plugins import Registered, registry_or_none
from loopguard.findings import Finding
from loopguard.rules import CONDITION_LEAVES
from loopguard.text.normalize import NORMALIZE_STEPS, Normalizer

Findings = Iterable[Finding]  # what a check returns


@dataclass(frozen=True)
class LintContext:
    """The inputs of every check for one rules file."""

    data: dict[str, Any]
    layers: Sequence[SourceDoc]
    agents: tuple[str, ...] | None = None  # the agent names given on the command line
    assembly: Assembly | None = None  # the schema loading used (given by the loader)
    scope: Path | None = None  # the loader judges one scope at a time (None: all)

    @property
    def top(self) -> dict[str, Any]:
        """What the linted file itself wrote (the last layer)."""
        data = self.layers[-1].data if self.layers else {}
        return data if isinstance(data, dict) else {}

    @cached_property
    def index(self) -> PositionIndex:
        return PositionIndex(self.layers)

    def merged_scopes(self) -> Iterator[tuple[Path, dict[str, Any]]]:
        """The scopes of the merged document, or only `scope` when one is set."""
        return ((p, b) for p, b in scopes(self.data) if self.scope in (None, p))

    def finding(
        self, path: Path, level: str, message: str, hint: str, code: str, at_key: bool = False
    ) -> Finding:
        """A finding about `path` of the merged document, placed where it was written."""
        return self.index.finding(self.data, path, level, message, hint, code, at_key)

    def place(self, prefix: Path, block: Path, keys: Sequence[str]) -> Path:
        """The first of `block.KEY` (inside scope `prefix`, else the global one) the linted file
        wrote, else the first any layer wrote, else the first."""
        candidates = [prefix + block + (k,) for k in keys] + [block + (k,) for k in keys]
        top = self.layers[-1].name if self.layers else ""
        written = [(path, self.index.owner(path)) for path in candidates]
        mine = [p for p, layer in written if layer is not None and layer.name == top]
        anywhere = [p for p, layer in written if layer is not None]
        return (mine or anywhere or candidates)[0]

    def duplicates(
        self, lists: Iterable[tuple[Path, Any]], what: str, level: str, code: str, norm: Any = str
    ) -> Findings:
        """A finding on each string item of the (path, list) `lists` that repeats an earlier one
        of its list (`norm`: how items compare; blank ones never do)."""
        for path, items in lists:
            first: dict[str, int] = {}
            for i, item in enumerate(items if isinstance(items, list) else []):
                key = norm(item) if isinstance(item, str) else ""
                if key.strip() and first.setdefault(key, i) != i:
                    message = f"duplicate {what} {item!r} (same as item {first[key] + 1})"
                    yield self.finding(path + (i,), level, message, "remove it", code)

    def option_scopes(self, detector: str) -> Iterator[OptionScope]:
        """A detector's effective options in each judged scope (`effective_scopes`)."""
        for prefix, name, config, _ in effective_scopes(self):
            options = (config.get("detectors") or {}).get(detector)
            options = options if isinstance(options, dict) else {}
            who = f" for agent {name!r}" if name is not None else ""
            yield OptionScope(prefix, detector, options, config, who)

    def option_finding(
        self,
        scope: OptionScope,
        options: Sequence[str],
        level: str,
        message: str,
        hint: str,
        code: str,
    ) -> Finding:
        """A finding about `options` of a scope, placed at the first of them that was written."""
        path = self.place(scope.prefix, ("detectors", scope.detector), options)
        return self.finding(path, level, message, hint, code)


@dataclass(frozen=True)
class OptionScope:
    """One scope's effective options of one detector."""

    prefix: Path  # () for the global scope, ("agents", NAME) for an agent's
    detector: str
    options: dict[str, Any]
    config: dict[str, Any]  # the scope's whole effective rules (for shared settings)
    who: str  # "" or " for agent 'NAME'", for messages


def scopes(data: dict[str, Any]) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The global blocks (prefix `()`) and each agent's block (prefix `agents.A`)."""
    yield (), data
    agents = data.get("agents")
    if isinstance(agents, dict):
        for name, block in agents.items():
            if isinstance(block, dict):
                yield ("agents", name), block


def keyword_sets(data: dict[str, Any]) -> Iterator[tuple[Path, str, Any]]:
    """(path, name, keywords) of every keyword set of every scope of `data`."""
    for prefix, block in scopes(data):
        for name, words in (block.get("keyword_sets") or {}).items():
            yield prefix + ("keyword_sets", name), name, words


def set_uses(block: dict[str, Any], prefix: Path) -> Iterator[tuple[Path, str]]:
    """Every keyword-set name the condition trees of one scope use (`turn.plan_condition`, then
    each intent's `when`), with its path (an iterative walk, one whole tree after the other)."""
    trees: list[tuple[Path, Any]] = []
    turn = block.get("turn")
    if isinstance(turn, dict) and "plan_condition" in turn:
        trees.append((prefix + ("turn", "plan_condition"), turn["plan_condition"]))
    intents = block.get("intents")
    for i, intent in enumerate(intents if isinstance(intents, list) else ()):
        if isinstance(intent, dict) and "when" in intent:
            trees.append((prefix + ("intents", i, "when"), intent["when"]))
    stack = trees[::-1]  # a tree's nodes go on top of the trees after it
    while stack:
        here, node = stack.pop()
        for op, arg in node.items() if isinstance(node, dict) else ():
            if op in ("all", "any") and isinstance(arg, list):
                stack.extend((here + (op, i), part) for i, part in enumerate(arg))
            elif op == "not":
                stack.append((here + (op,), arg))
            elif op in CONDITION_LEAVES and isinstance(arg, str):
                yield here + (op,), arg
            elif op in CONDITION_LEAVES and isinstance(arg, list):
                yield from ((here + (op, i), n) for i, n in enumerate(arg) if isinstance(n, str))


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


def detectors() -> list[Registered]:
    """The registered detectors (none when the plugin setup is broken)."""
    registry = registry_or_none()
    return [] if registry is None else list(registry.entries)


def normaliser(data: dict[str, Any]) -> Any:
    """The rules' keyword normalisation, the runtime's own `Normalizer`: lint calls two keywords
    the same when the matcher cannot tell them apart (unknown steps: the schema's concern)."""
    steps = (data.get("turn") or {}).get("normalize")
    return Normalizer([s for s in steps if s in NORMALIZE_STEPS] if isinstance(steps, list) else [])


def effective_scopes(ctx: LintContext) -> Iterator[tuple[Path, Any, dict[str, Any], list[Repair]]]:
    """(prefix, agent name or None, effective rules, repairs) of each judged scope: every one,
    or with `--agent`, the global one and the named agents'."""
    every = [p for p, _ in scopes(ctx.data)]
    if ctx.agents is not None:
        every = [()] + [("agents", a) for a in ctx.agents if ("agents", a) in every]
    for prefix in every:
        name = prefix[1] if prefix else None
        yield prefix, name, *effective_config(ctx.data, name)
