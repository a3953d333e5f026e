"""Defaults and descriptions written into the assembled schema, from their single sources.

Editors show a property's `default` and `description` on hover and offer the
default on completion. The defaults are not written by hand: they are read from
`rules/default.yaml` (what `builtin:default` sets) and put beside each property
the file sets; a `$ref` is followed to find the properties of an object, but a
default goes on the referring property, never on a shared definition.
"""

from __future__ import annotations

import copy
from typing import Any

from loopguard.rules import bundled_defaults

_SHARED = (
    "#/$defs/count",
    "#/$defs/names",
    "#/$defs/pattern",
    "#/$defs/set_ref",
    "#/$defs/condition",
)  # used in many places: the default goes on the referrer


def _resolve(schema: dict[str, Any], node: Any) -> Any:
    """Follow local `$ref`s (`#/a/b`) to the node they name."""
    seen = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 8:
        target: Any = schema
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        if target is None:
            return node
        node, seen = target, seen + 1
    return node


def _put(schema: dict[str, Any], node: dict[str, Any], values: dict[str, Any]) -> None:
    props = _resolve(schema, node).get("properties")
    if not isinstance(props, dict):
        return
    for key, value in values.items():
        prop = props.get(key)
        if not isinstance(prop, dict):
            continue
        inner = _resolve(schema, prop)
        if (
            isinstance(value, dict)
            and isinstance(inner, dict)
            and isinstance(inner.get("properties"), dict)
            and prop.get("$ref") not in _SHARED
        ):
            _put(schema, prop, value)
        else:
            prop["default"] = value


def _languages(schema: dict[str, Any], messages: Any) -> None:
    """Each language the defaults write gets its own copy of the templates (for its defaults)."""
    block = (schema.get("$defs") or {}).get("messages")
    templates = (schema.get("$defs") or {}).get("templates")
    if not (isinstance(messages, dict) and isinstance(block, dict) and isinstance(templates, dict)):
        return
    props = block.setdefault("properties", {})
    for lang, texts in messages.items():
        if isinstance(texts, dict) and lang not in props:
            props[lang] = {
                **copy.deepcopy(templates),
                "description": f"Texts in language {lang!r} (bundled defaults shown).",
            }


def add_defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with the `default` of every property `rules/default.yaml` sets (in place)."""
    values = {k: v for k, v in bundled_defaults().items() if k not in ("version", "extends")}
    _languages(schema, values.get("messages"))
    _put(schema, schema, values)
    return schema
