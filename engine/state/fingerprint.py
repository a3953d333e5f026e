"""Canonical argument text, stable digests and outcome digests.

Digests are BLAKE2b-128 over UTF-8 text: identical in every process and on
every machine (never Python's salted `hash()`), so state can be persisted.
Odd values never raise: anything JSON cannot express gets a documented
fallback form (see `_jsonable`). Plain JSON data is encoded whole by the C encoder; the
Python walks (the careful one for other values, and dropping volatile result fields) visit
at most WALK_MAX values a call and 200 levels, so a result whose attributes reach a module,
or a list of ten million items, costs a bounded time, not a hang.
"""

from __future__ import annotations

import base64
import json
import math
import sys
from collections.abc import Mapping, Set
from hashlib import blake2b
from types import ModuleType
from typing import Any

from loopguard.text.hints import is_int
from loopguard.text.jsontext import loads


def _refuse(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")


def _encoder() -> Any:
    """The canonical JSON text of a value in chunks, as `json.JSONEncoder(sort_keys=True,
    ensure_ascii=False, allow_nan=False)` makes it, by the C encoder made once: `encode`
    builds a new one per call, which costs twice the encoding of a small call's arguments.
    It keeps no markers: a cycle raises RecursionError instead of ValueError (either takes
    the careful path)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C speed-ups (another interpreter): the plain encoder
        plain = json.JSONEncoder(sort_keys=True, ensure_ascii=False, allow_nan=False).encode
        return lambda value, _level: (plain(value),)
    return make(None, _refuse, json.encoder.encode_basestring, None, ": ", ", ", True, False, False)


_ENCODE = _encoder()  # (value, 0) -> the chunks of its canonical text
_join = "".join


def _dumps(value: Any) -> str:
    return _join(_ENCODE(value, 0))


_MAX_DEPTH = 200
_LOG2_10 = 3.3219280948873626
_SLICE = 1 << 20  # characters encoded at a time when digesting a long text
WALK_MAX = 100_000  # values a Python walk of one argument or result visits, at most


class _Walk:
    """One walk's budget: the values it may still visit, and the containers on its path."""

    __slots__ = ("left", "seen")

    def __init__(self) -> None:
        self.left = WALK_MAX
        self.seen: set[int] = set()


def digest_text(text: str) -> bytes:
    """16-byte BLAKE2b digest of a text (the surrogate-safe UTF-8 encoding).

    A long text is encoded a slice at a time, so digesting never holds a second,
    UTF-8 copy of it (slicing by code points keeps the encoding the same).
    """
    if len(text) <= _SLICE:
        return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    hasher = blake2b(digest_size=16)
    for start in range(0, len(text), _SLICE):
        hasher.update(text[start : start + _SLICE].encode("utf-8", "surrogatepass"))
    return hasher.digest()


def parse_args(args: Any) -> Any:
    """Arguments as a value: a JSON string is parsed, an unparsable one stays raw text.

    Types are tested with `type()` (an object whose `__class__` raises breaks `isinstance`),
    and a `str` or `bytes` subclass is read as its plain text: its own methods never run.
    """
    kind = type(args)
    if kind is dict or kind is list:  # the usual case first: nothing to test
        return args
    if kind is str or issubclass(kind, (str, bytes, bytearray)):
        if kind is str:
            text = args
        elif issubclass(kind, str):
            text = str.__str__(args)
        else:
            text = (bytes.decode if issubclass(kind, bytes) else bytearray.decode)(
                args, "utf-8", "replace"
            )
        if not text.strip():
            return {}
        try:
            return loads(text)
        except (ValueError, RecursionError):
            return text
    if args is None:
        return {}
    try:
        args.__class__  # noqa: B018 — what `isinstance` reads: detectors use it on args
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001
        return {"$type": _type_name(args), "$value": "$unprintable"}
    return args


def canonical_text(value: Any) -> str:
    """JSON with keys sorted at every depth and non-ASCII kept; raw text stays as is."""
    kind = type(value)
    if kind is str:
        return value
    if kind is not dict and issubclass(kind, str):  # its text, as a plain str (its own
        return str.__str__(value)  # methods may raise)
    try:
        return _join(_ENCODE(value, 0))  # (`_dumps`, inlined: it runs twice per call)
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 — odd or hostile values take the careful path below
        return _dumps(_jsonable(value, 0, _Walk()))


def _jsonable(value: Any, depth: int, walk: _Walk) -> Any:
    """Stable stand-ins for what JSON cannot express.

    bytes -> {"$bytes": base64}; set/frozenset -> list sorted by JSON text; tuple
    -> list; NaN/Infinity -> "NaN"/"Infinity"/"-Infinity"; an int too long to
    print in decimal (`sys.get_int_max_str_digits`) -> {"$int": hex}; non-string
    keys -> their canonical text; a cycle -> "$cycle"; nesting past 200 ->
    "$deep"; an object with `tolist` (NumPy arrays and scalars) -> {"$type",
    "$value": tolist()}, or for one with more elements than the walk has left (and no
    Python objects in it) {"$type", "$value": {"shape", "dtype", "blake2b" of tobytes()}};
    a module -> {"$type": "builtins.module", "$value": its name}; any other object ->
    {"$type": qualified name, "$value": its fields or str()}; an object whose iteration,
    fields or str() raise -> {"$type", "$value": "$unprintable"}. Past WALK_MAX values:
    a value -> "$more", the items a container has beyond -> {"$more": how many} (a list's
    last item, a mapping's "$more" key), a set bigger than what is left -> {"$set": size}.
    """
    walk.left -= 1
    if walk.left < 0:
        return "$more"
    if depth > _MAX_DEPTH:
        return "$deep"
    try:  # (free unless it raises) an object whose `__class__` raises breaks `isinstance`
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int):
            return {"$int": hex(value)} if _too_long(value) else value
        if isinstance(value, float):
            if math.isfinite(value):
                return value
            return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        if isinstance(value, (bytes, bytearray, memoryview)):
            return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001
        return {"$type": _type_name(value), "$value": "$unprintable"}
    marker = id(value)
    seen = walk.seen
    if marker in seen:
        return "$cycle"
    seen.add(marker)
    try:
        return _container(value, depth, walk)
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 — a hostile __iter__, items(), __dict__ (even sys.exit)
        return {"$type": _type_name(value), "$value": "$unprintable"}
    finally:
        seen.discard(marker)


def _container(value: Any, depth: int, walk: _Walk) -> Any:
    """The stand-in of a mapping, sequence, set or other object (see `_jsonable`)."""
    if isinstance(value, Mapping):
        items = {}
        taken = 0
        for key, item in value.items():
            if walk.left <= 0:
                break
            name = key if isinstance(key, str) else canonical_text(_jsonable(key, depth + 1, walk))
            items[name] = _jsonable(item, depth + 1, walk)
            taken += 1
        if taken < len(value):
            items["$more"] = len(value) - taken
        return items
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            if walk.left <= 0:
                break
            out.append(_jsonable(item, depth + 1, walk))
        if len(out) < len(value):
            out.append({"$more": len(value) - len(out)})
        return out
    if isinstance(value, Set):
        if len(value) > walk.left:
            return {"$set": len(value)}  # members in hash order would differ between processes
        parts = [_jsonable(item, depth + 1, walk) for item in value]
        return sorted(parts, key=_dumps)  # JSON text: True and "true" sort apart
    if isinstance(value, ModuleType):  # a reference to a library, not data: by its name
        return {"$type": "builtins.module", "$value": _safe_str(getattr(value, "__name__", "?"))}
    tolist = getattr(type(value), "tolist", None)
    if callable(tolist):  # NumPy: repr() elides long arrays, tolist() has every element
        whole = _array_digest(value, walk)
        if whole is not None:
            return {"$type": _type_name(value), "$value": whole}
        return {"$type": _type_name(value), "$value": _jsonable(tolist(value), depth + 1, walk)}
    fields = getattr(value, "__dict__", None)
    shown = (
        _jsonable(dict(fields), depth + 1, walk) if isinstance(fields, dict) else _safe_str(value)
    )
    return {"$type": _type_name(value), "$value": shown}


def _array_digest(value: Any, walk: _Walk) -> dict[str, Any] | None:
    """An array too big for the walk by its shape, dtype and the digest of its bytes (every
    element still counts); None when it fits, or holds Python objects (their bytes would be
    memory addresses)."""
    size, dtype = getattr(value, "size", None), getattr(value, "dtype", None)
    tobytes = getattr(type(value), "tobytes", None)
    if not (is_int(size) and size > walk.left and callable(tobytes)):
        return None
    if getattr(dtype, "hasobject", True) is not False:
        return None
    shape = getattr(value, "shape", None)
    return {
        "shape": [int(n) for n in shape] if isinstance(shape, tuple) else None,
        "dtype": _safe_str(dtype),
        "blake2b": blake2b(tobytes(value), digest_size=16).hexdigest(),
    }


def _type_name(value: Any) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def _too_long(value: int) -> bool:
    """True when `str(value)` would exceed the interpreter's int-to-text digit limit."""
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    return bool(limit) and value.bit_length() > (limit - 1) * _LOG2_10


def _safe_str(value: Any) -> str:
    try:
        if type(value) is not bool and issubclass(type(value), int) and _too_long(value):
            return hex(value)
        text = str.__str__(str(value))  # a plain str: a subclass's own methods may raise
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 — a hostile __str__ (even sys.exit) must not take
        return "$unprintable"  # the guard down
    # Default reprs carry memory addresses, which differ between processes.
    return text.split(" at 0x")[0] if " at 0x" in text else text


def args_digest(tool: str, canonical: str) -> bytes:
    """Digest of (tool name, canonical argument text)."""
    if len(canonical) <= _SLICE:  # digest_text, inlined (it runs on every call)
        return blake2b(
            f"{tool}\x00{canonical}".encode("utf-8", "surrogatepass"), digest_size=16
        ).digest()
    hasher = blake2b(f"{tool}\x00".encode("utf-8", "surrogatepass"), digest_size=16)
    for start in range(0, len(canonical), _SLICE):  # == digest_text(tool + NUL + canonical)
        hasher.update(canonical[start : start + _SLICE].encode("utf-8", "surrogatepass"))
    return hasher.digest()


def error_outcome(error: Any) -> bytes:
    """Outcome of a failed call: `error:` + digest of the error text."""
    return b"error:" + digest_text(_safe_str(error))


def outcome_of_text(text: str) -> bytes:
    """The outcome digest of a normalised result text (see `result_text`)."""
    if len(text) <= _SLICE:  # digest_text, inlined (it runs on every call)
        return b"ok:" + blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return b"ok:" + digest_text(text)


def result_text(result: Any, drop: frozenset[str], keep: frozenset[str] | None) -> str:
    """A result as canonical text, volatile fields dropped (or only `keep` kept).

    A string result stays as is unless it is a JSON object or array and fields
    are to be dropped or kept; then it is parsed and treated like the value.
    """
    kind = type(result)
    if kind is not str and kind is not dict and issubclass(kind, str):
        result = str.__str__(result)  # a str subclass: its text (its own methods may raise)
    value = result
    if type(value) is str and value[:1] in ("{", "[") and (drop or keep):
        try:
            value = loads(value)
        except (ValueError, RecursionError):
            value = result
    try:
        if keep is not None and isinstance(value, Mapping):
            value = {k: v for k, v in value.items() if k in keep}
        if drop and isinstance(value, (dict, list)):
            value = _without(value, drop, 0, [WALK_MAX])
        elif drop and isinstance(value, Mapping):
            value = _without(dict(value), drop, 0, [WALK_MAX])
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 — a hostile container: its stand-in text is digested
        value = result
    return canonical_text(value)


def _without(value: Any, drop: frozenset[str], depth: int, left: list[int]) -> Any:
    """`value` without the keys in `drop` at every depth; the same object when none occur.

    `left` counts down the items visited: a container reached past WALK_MAX of them (or
    200 levels) is kept as it is, volatile fields and all.
    """
    if depth > _MAX_DEPTH:
        return value
    left[0] -= len(value)
    if left[0] < 0:
        return value
    if isinstance(value, dict):
        changed = not drop.isdisjoint(value)
        items = {}
        for key, item in value.items():
            if key in drop:
                continue
            if isinstance(item, (dict, list)):
                new = _without(item, drop, depth + 1, left)
                changed = changed or new is not item
                item = new
            items[key] = item
        return items if changed else value
    if isinstance(value, list):
        out = [
            _without(v, drop, depth + 1, left) if isinstance(v, (dict, list)) else v for v in value
        ]
        return out if any(a is not b for a, b in zip(out, value, strict=True)) else value
    return value
