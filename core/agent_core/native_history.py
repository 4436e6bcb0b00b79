"""Keeping the provider-native history inside the Session.

A provider's native history holds what core messages cannot: thinking blocks
with their signatures, native tool-call ids, cache markers. Converting the
whole conversation again on every request would also cost O(history). So the
engine keeps the native history in the session's metadata, under one
reserved key::

    session.metadata["agent_core.native_history"] = {
        "<provider name>": {
            "messages":   [...native messages...],
            "core_count": 12,          # how many core messages it covers
            "tail":       "9f2c...",   # digest of core message core_count-1
        }
    }

It travels with ``to_dict``/``from_dict``, so a stateless request handler
round-trips it for free. On the next request only the core messages after
``core_count`` are converted and appended. The record is thrown away and
rebuilt from all core messages when it belongs to another provider, is
missing, or no longer matches the core messages (the application edited or
truncated them: the digest of the last covered message tells).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from .frozen import FrozenDict, FrozenList, freeze
from .types import Message, Session

__all__ = ["NATIVE_KEY", "load_native", "store_native"]

NATIVE_KEY = "agent_core.native_history"


def _digest(message: Message) -> str:
    return hashlib.blake2b(message.to_json(), digest_size=8).hexdigest()


def load_native(session: Session, provider: str) -> tuple[FrozenList, int]:
    """Return ``(native_messages, core_count)`` reusable for ``provider``.

    ``(empty, 0)`` means: rebuild from every core message.
    """
    box = session.metadata.get(NATIVE_KEY)
    if not isinstance(box, Mapping):
        return FrozenList(), 0
    record = box.get(provider)
    if not isinstance(record, Mapping):
        return FrozenList(), 0
    native = record.get("messages")
    count = record.get("core_count")
    if not isinstance(native, list) or not isinstance(count, int) or isinstance(count, bool):
        return FrozenList(), 0
    if count > len(session.messages) or count < 0:
        return FrozenList(), 0
    if count and record.get("tail") != _digest(session.messages[count - 1]):
        return FrozenList(), 0
    return freeze(native), count


def store_native(session: Session, provider: str, native: Any, core_count: int | None = None) -> Session:
    """Return ``session`` with ``native`` recorded as ``provider``'s history.

    ``core_count`` defaults to all of the session's messages.
    """
    count = len(session.messages) if core_count is None else core_count
    record = FrozenDict._trusted(
        {
            "messages": freeze(native),
            "core_count": count,
            "tail": _digest(session.messages[count - 1]) if count else "",
        }
    )
    return session.with_metadata({NATIVE_KEY: FrozenDict._trusted({provider: record})})
