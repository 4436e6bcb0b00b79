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


#: what a refusal's path starts from: the value freeze_json was handed (no ``[key]`` to add)
_TOP: Any = object()


def _json(value: Any, budget: int, key: Any = _TOP) -> Any:
    """Check and normalise ``value``, the item at ``key`` of its container; ``budget`` levels may follow.

    Scalars and trees already checked return here; a container goes to
    :func:`_json_mapping` or :func:`_json_sequence`, which call this function
    again for each item (two frames per level, so :data:`MAX_DEPTH`, not the
    interpreter's recursion limit, ends a deep walk); the rest goes to
    :func:`_json_other`. A refusal's path grows by ``[key]`` on its way out.
    """
    try:
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
        if isinstance(value, (dict, Mapping)):  # dict first: no ABC check for the usual case
            return _json_mapping(value, budget - 1)
        if isinstance(value, _SEQUENCES):
            return _json_sequence(value, budget - 1)
        return _json_other(value, budget - 1)
    except _Refused as r:
        if key is not _TOP:
            r.path = f"[{key!r}]{r.path}"
        raise


#: item classes a container's loop keeps without a call (strings only when ASCII, frozen trees only when checked)
_PLAIN = frozenset({int, bool, type(None)})
_SEQUENCES = (list, tuple, FrozenVector, pyrsistent.PVector)


def _json_mapping(value: Mapping[Any, Any], budget: int) -> FrozenDict:
    """A checked FrozenDict of ``value`` (keys must be strings); ``value`` itself when nothing changed."""
    items: dict[str, Any] = {}
    changed = value.__class__ is not FrozenDict
    for k, v in value.items():
        if k.__class__ is not str:
            if not isinstance(k, str):
                raise _Refused(f"the key {k!r} is a {type(k).__name__}; JSON object keys are strings")
            k = str.__str__(k)
            changed = True
        vc = v.__class__
        if not (vc in _PLAIN or (vc is str and v.isascii()) or ((vc is FrozenDict or vc is FrozenList) and v._json)):
            nv = _json(v, budget, k)
            if nv is not v:
                changed, v = True, nv
        items[k] = v
    out = FrozenDict.from_frozen(items) if changed else value
    out._json = True
    return out  # type: ignore[return-value]


def _json_sequence(value: Any, budget: int) -> FrozenList:
    """A checked FrozenList of a list, tuple or vector; ``value`` itself when nothing changed."""
    seq: list[Any] = []
    changed = value.__class__ is not FrozenList
    for i, v in enumerate(value):
        vc = v.__class__
        # the common items are checked inline, as in _json_mapping: no call per item
        if not (vc in _PLAIN or (vc is str and v.isascii()) or ((vc is FrozenDict or vc is FrozenList) and v._json)):
            nv = _json(v, budget, i)
            if nv is not v:
                changed, v = True, nv
        seq.append(v)
    out = FrozenList.from_frozen(seq) if changed else value
    out._json = True
    return out


def _json_other(value: Any, budget: int) -> Any:
    """Sets (sorted by their items' JSON), subclasses of the scalars, agent-core's values; else a refusal."""
    if isinstance(value, (set, frozenset, pyrsistent.PSet)):
        try:
            members = [_json(v, budget) for v in value]
        except _Refused as r:
            r.path = f"{{set item}}{r.path}"
            raise
        ordered = FrozenList.from_frozen(sorted(members, key=_json_key))
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
    kind = type(value).__name__
    raise _Refused(f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind} cannot be carried by JSON")
