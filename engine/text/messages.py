"""Texts shown to the model or the user, rendered from the rules' `messages` templates.

`messages.language` is `auto`, `zh` or `en`. `auto` picks `zh` when the text the message is about
(usually the user's request) contains a Han character, `en` otherwise. A key missing from the chosen
language falls back to the other language, then to the bundled English text of `rules/default.yaml`,
so a partial rules file never makes the runtime crash. Templates are filled by plain `{name}`
substitution (`templates`: no format specs or attribute access); rules loading refuses unknown
fields, and at run time anything else stays as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from loopguard.rules import default
from loopguard.text import templates

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")


def has_han(text: str) -> bool:
    """True when `text` contains a Chinese (Han) character."""
    return bool(_HAN.search(text))


def language(config: Mapping[str, Any], text_for_language: str | None) -> str:
    """`zh` or `en` (or another configured code) for this text under `messages.language`."""
    messages = config.get("messages") or {}
    chosen = messages.get("language") if isinstance(messages, Mapping) else None
    chosen = default("messages.language") if chosen is None else chosen
    if chosen in (None, "auto"):
        return "zh" if has_han(text_for_language or "") else "en"
    return str(chosen)


def template(config: Mapping[str, Any], key: str, lang: str) -> str:
    """The template for `key` in `lang`, with the fallbacks described above."""
    messages = config.get("messages") or {}
    if not isinstance(messages, Mapping):
        messages = {}
    for code in (lang, "en", "zh"):
        pack = messages.get(code)
        if isinstance(pack, Mapping) and isinstance(pack.get(key), str):
            return pack[key]
    bundled = default(f"messages.en.{key}")
    return bundled if isinstance(bundled, str) else key


def fill(text: str, **fields: Any) -> str:
    """A template with its `{fields}` filled; a malformed one is returned as written."""
    return fill_map(text, fields)


def fill_map(text: str, fields: dict[str, Any]) -> str:
    """`fill` with the fields given as one dict (plain `{name}` substitution, see `templates`)."""
    return templates.fill(text, fields)


def render(
    config: Mapping[str, Any], key: str, text_for_language: str | None, **fields: Any
) -> str:
    """Render template `key` in the language chosen for `text_for_language`."""
    return fill(template(config, key, language(config, text_for_language)), **fields)
