"""``freeze_json``: frozen values that JSON carries exactly (messages, sessions, tool results).

Kept beside :mod:`agent_core.values.frozen` rather than in it: ``freeze`` accepts
any object a plugin keeps in its state, while what goes into a message must
survive a JSON round trip unchanged, which is a stricter, separate rule
(``docs/conventions.md``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import msgspec
import pyrsistent

from ..errors import InvalidValueError
from .frozen import MAX_DEPTH, FrozenDict, FrozenList
from .vector import FrozenVector

__all__ = ["freeze_json"]


class _Refused(Exception):
    """Internal: where and why freeze_json refused a value (the path grows on the way out)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.path = ""


_json_key = msgspec.json.Encoder().encode


def freeze_json(value: Any, what: str = "value") -> Any:
    """Freeze ``value`` for a message, session or tool result: JSON must carry it exactly.

    Normalised once, here: tuples become lists; sets and frozensets become
    lists sorted by their items' JSON text; ``str``/``int``/``float``
    subclasses (enums) become the plain type; a ``Message`` (or another of
    agent-core's values) becomes its serialized mapping. Refused: bytes, NaN
    and infinities, non-string keys, text with lone surrogates (not valid
    Unicode), any other object, and nesting deeper than :data:`MAX_DEPTH`.

    Raises:
        InvalidValueError: naming ``what`` and the path to the refused part.
    """
    try:
        return _json(value, MAX_DEPTH)
    except _Refused as r:
        raise InvalidValueError(f"{what}{r.path}: {r.reason}", path=f"{what}{r.path}") from None


def _json(value: Any, budget: int) -> Any:
    cls = value.__class__
    if cls is str:
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise _Refused("text with a lone surrogate is not valid Unicode; JSON cannot carry it") from None
        return value
    if value is None or cls is bool or cls is int:
        return value
    if cls is float:
        if math.isfinite(value):
            return value
        raise _Refused(f"{value!r} is not a JSON number")
    if (cls is FrozenDict or cls is FrozenList) and value._json:
        return value
    if budget <= 0:
        raise _Refused(f"nested deeper than {MAX_DEPTH} levels (or contains itself)")
    budget -= 1
    if isinstance(value, Mapping):
        items: dict[str, Any] = {}
        changed = cls is not FrozenDict
        for k, v in value.items():
            if k.__class__ is not str:
                if not isinstance(k, str):
                    raise _Refused(f"the key {k!r} is a {type(k).__name__}; JSON object keys are strings")
                k = str.__str__(k)
                changed = True
            vc = v.__class__
            if not (vc is int or vc is bool or v is None or (vc is str and v.isascii())
                    or ((vc is FrozenDict or vc is FrozenList) and v._json)):
                try:
                    nv = _json(v, budget)
                except _Refused as r:
                    r.path = f"[{k!r}]{r.path}"
                    raise
                if nv is not v:
                    changed = True
                    v = nv
            items[k] = v
        out = FrozenDict._trusted(items) if changed else value
        out._json = True
        return out
    if isinstance(value, (list, tuple, FrozenVector, pyrsistent.PVector)):
        seq: list[Any] = []
        changed = cls is not FrozenList
        for i, v in enumerate(value):
            vc = v.__class__
            if not (vc is int or vc is bool or v is None or (vc is str and v.isascii())
                    or ((vc is FrozenDict or vc is FrozenList) and v._json)):
                # the common cases above are checked inline: no call per item
                try:
                    nv = _json(v, budget)
                except _Refused as r:
                    r.path = f"[{i}]{r.path}"
                    raise
                if nv is not v:
                    changed = True
                    v = nv
            seq.append(v)
        out = FrozenList._trusted(seq) if changed else value
        out._json = True
        return out
    if isinstance(value, (set, frozenset, pyrsistent.PSet)):
        try:
            members = [_json(v, budget) for v in value]
        except _Refused as r:
            r.path = f"{{set item}}{r.path}"
            raise
        ordered = FrozenList._trusted(sorted(members, key=_json_key))
        ordered._json = True
        return ordered
    if isinstance(value, str):
        return _json(str.__str__(value), budget)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _json(float(value), budget)
    view = getattr(value, "_json_view", None)
    if view is not None and callable(view):
        return _json(view(), budget + 1)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise _Refused(f"{type(value).__name__} cannot be carried by JSON; decode it to text or base64 it first")
    raise _Refused(f"a {type(value).__name__} cannot be carried by JSON")
