"""Message templates: plain `{name}` substitution of known fields, checked when rules load.

`str.format` let a rules file allocate gigabytes per decision
(`{message:>2000000000}`) or read Python internals (`{tool.__class__.__mro__}`).
Templates are therefore parsed here: `{name}` is a field, `{{` and `}}` are
literal braces, and nothing else may stand in braces. Each template key offers
its own fields (`FIELDS`); an unknown field, a format spec, a conversion,
attribute or index access, or a lone brace is a load error (`template`)
at the template's position.

Passes: `blocked: "Blocked: {message} ({detector})"`.
Fails: `blocked: "{message:>20}"`, `blocked: "{tool.__class__}"`, `round_cap: "{message}"`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

_DECISION = ("message", "detector", "count", "tool")
_RETRY_PROBLEM = ("tool", "call")
FIELDS: dict[str, tuple[str, ...]] = {
    "warn_note": _DECISION,
    "blocked": _DECISION,
    "breaker": _DECISION,
    "aborted": (),
    "retry_no_output": _RETRY_PROBLEM,
    "retry_plan_only": _RETRY_PROBLEM,
    "retry_text_only": _RETRY_PROBLEM,
    "retry_other_args": _RETRY_PROBLEM,
    "retry": ("problem", "reason", "call", "tool"),
    "exhausted": ("tool", "retries", "call"),
    "exhausted_other_args": ("tool", "retries", "call"),
    "round_cap": ("rounds",),
}
_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}|[{}]")


class TemplateError(ValueError):
    """A template that does not parse: `index` is the offending character."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


@lru_cache(maxsize=512)
def parse(text: str) -> tuple[tuple[str, bool], ...]:
    """The template as (text, is_field) parts; raises TemplateError."""
    parts: list[tuple[str, bool]] = []
    at = 0
    for match in _TOKEN.finditer(text):
        if match.start() > at:
            parts.append((text[at : match.start()], False))
        token = match.group()
        if token in ("{{", "}}"):
            parts.append((token[0], False))
        elif match.group(1):
            parts.append((match.group(1), True))
        else:
            raise TemplateError(match.start(), _brace_problem(text, match.start()))
        at = match.end()
    if at < len(text):
        parts.append((text[at:], False))
    return tuple(parts)


def _brace_problem(text: str, index: int) -> str:
    if text[index] == "}":
        return "a lone '}' (write '}}' for a literal brace)"
    end = text.find("}", index)
    inner = text[index + 1 : end] if end > index else ""
    if end < 0:
        return "a '{' that is never closed (write '{{' for a literal brace)"
    if any(c in inner for c in ":!.[") and re.match(r"[A-Za-z_]", inner):
        return (
            f"{{{inner[:40]}}} uses a format spec, conversion or attribute access; "
            "only plain {name} fields are filled in"
        )
    return f"{{{inner[:40]}}} is not a field name"


def fill(text: str, fields: Mapping[str, Any]) -> str:
    """`text` with its `{name}` fields replaced; unknown fields and bad braces stay as written."""
    try:
        parts = parse(text)
    except TemplateError:
        return text
    try:
        # Fast path (a blocked call renders on the hot path): `parse` admitted only plain
        # `{name}` fields and `{{`/`}}`, where str.format_map means exactly the same thing.
        return text.format_map(fields)
    except Exception:  # noqa: BLE001 - a missing field (kept as written) or an odd value
        return _fill_parts(parts, fields)


def _fill_parts(parts: tuple[tuple[str, bool], ...], fields: Mapping[str, Any]) -> str:
    """Part-by-part filling: a field missing from `fields` stays as written."""
    out = []
    for part, is_field in parts:
        if is_field:
            value = fields.get(part)
            out.append("{" + part + "}" if value is None and part not in fields else str(value))
        else:
            out.append(part)
    return "".join(out)


def problems(key: str, text: str) -> Iterator[str]:
    """What is wrong with one template (nothing for a good one)."""
    try:
        parts = parse(text)
    except TemplateError as exc:
        yield f"message template {key!r} does not parse: {exc}"
        return
    allowed = FIELDS.get(key)
    for part, is_field in parts:
        if is_field and allowed is not None and part not in allowed:
            offered = ", ".join("{" + f + "}" for f in allowed) or "none"
            yield f"unknown field {{{part}}} in template {key!r} (fields: {offered})"
