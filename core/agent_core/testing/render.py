"""Render agent-core values as stable, diff-friendly text for snapshots.

:func:`render` turns a Session, Message, PartialMessage, event (or a list of
events), native message dicts, a harness record or any plain value into
indented JSON with sorted keys, one value per line, so a changed transform
shows up in review as a small line diff.

The one normalisation rule, so snapshots do not churn between runs:

* a string under a key named ``id`` or ending in ``_id`` (``request_id``,
  ``session_id``, ``tool_call_id``, ...) becomes ``<id:N>``, where N counts the
  distinct such strings in the order they first appear in the rendered value
  (keys sorted). The same id always gets the same placeholder within one
  snapshot, so a tool call and the result that answers it still match;
* a value under ``created``, ``created_at`` or ``timestamp`` becomes ``<time>``.

Nothing else is changed: content, tool names, arguments and metadata appear
as they are.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from .. import Message, PartialMessage, Session, encode_event

__all__ = ["normalise", "render", "to_plain"]

_TIME_KEYS = frozenset({"created", "created_at", "timestamp"})


def _is_id_key(key: Any) -> bool:
    return isinstance(key, str) and (key == "id" or key.endswith("_id"))


def _is_event(value: Any) -> bool:
    return isinstance(value, msgspec.Struct) and hasattr(value, "type") and hasattr(value, "request_id")


def to_plain(value: Any) -> Any:
    """``value`` as plain JSON data: dicts, lists, strings, numbers, bools and None.

    Sessions and messages become their ``to_dict()`` form (with a ``"kind"``
    key saying what they were), events their JSON form, dataclasses (harness
    records) their fields, frozen containers their plain twins.
    """
    if isinstance(value, Session):
        return {"kind": "Session", **value.to_dict()}
    if isinstance(value, (Message, PartialMessage)):
        return {"kind": type(value).__name__, **value.to_dict()}
    if _is_event(value):
        return json.loads(encode_event(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        plain_fields = getattr(value, "snapshot_fields", None)
        fields = plain_fields() if callable(plain_fields) else {
            f.name: getattr(value, f.name) for f in dataclasses.fields(value)
        }
        return {"kind": type(value).__name__, **{k: to_plain(v) for k, v in fields.items()}}
    if isinstance(value, msgspec.Struct):  # RequestResult, Outcome, Usage, ...: field by field
        return {"kind": type(value).__name__, **{f: to_plain(getattr(value, f)) for f in value.__struct_fields__}}
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, Sequence)) and not isinstance(value, (str, bytes)):  # FrozenVector too
        return [to_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((to_plain(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True, default=repr))
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def normalise(value: Any) -> Any:
    """Apply the id/time rule of the module docstring to plain data (a new value)."""
    ids: dict[str, str] = {}

    def walk(v: Any, key: Any = None) -> Any:
        if key in _TIME_KEYS and v is not None:
            return "<time>"
        if isinstance(v, str) and _is_id_key(key):
            if v not in ids:
                ids[v] = f"<id:{len(ids) + 1}>"
            return ids[v]
        if isinstance(v, dict):
            return {k: walk(v[k], k) for k in sorted(v)}
        if isinstance(v, list):
            return [walk(item) for item in v]
        return v

    return walk(value)


#: A list or mapping whose one-line JSON is at most this long stays on one line.
INLINE_WIDTH = 100


def _dump(value: Any, indent: int) -> str:
    flat = json.dumps(value, sort_keys=True, ensure_ascii=False)
    if not isinstance(value, (dict, list)) or not value or len(flat) + indent <= INLINE_WIDTH:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, list):
        items = [pad + _dump(v, indent + 2) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"
    items = [f"{pad}{json.dumps(k, ensure_ascii=False)}: {_dump(value[k], indent + 2)}" for k in sorted(value)]
    return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"


def render(value: Any) -> str:
    """Stable text for ``value``: plain data, ids and times normalised, as JSON with sorted keys.

    A list or mapping that fits in :data:`INLINE_WIDTH` columns stays on one
    line (a short message is one line); a longer one puts each item on its own.
    """
    return _dump(normalise(to_plain(value)), 0)

