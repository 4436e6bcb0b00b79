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
            "prefix_digest": "9f2c...",  # chained digest of core messages 0..core_count-1
        }
    }

It travels with ``to_dict``/``from_dict``, so a stateless request handler
round-trips it for free. On the next request only the core messages after
``core_count`` are converted and appended. The record is thrown away and
rebuilt from all core messages when it belongs to another provider, is
missing, or no longer matches the core messages.

"Matches" means every covered message is unchanged, not only the last one:
an application that redacts message 0 must never have the original text sent
again from the stored history. The digest is chained (digest ``i`` hashes
digest ``i-1`` with message ``i``), so it pins the whole prefix. Computing it
would cost O(history) per request, so the chain is memoized on the session's
message vector (:meth:`~agent_core.values.frozen.FrozenVector.prefix_memo`): a vector
made by appending inherits the digests of its leading messages, and only the
messages added since are hashed. A vector built afresh (``replace_messages``,
``from_dict``) has no memo, so its digests are computed once, from its own
messages: an edit can never hide behind a stale memo.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InvalidValueError
from .frozen import _SCALARS, FrozenDict, FrozenList, FrozenVector, begins_with, freeze
from .json_values import freeze_json
from .messages import Message, Session

__all__ = ["NATIVE_KEY", "load_native", "persistable", "prefix_digest", "store_native", "without_native_history"]

NATIVE_KEY = "agent_core.native_history"


def without_native_history(session: Session) -> Session:
    """``session`` as people read it: the engine's record of each provider's native messages left out.

    That record is what lets the next request continue the provider's own history; it
    belongs in storage, not in an export, a CLI's JSON or a stream a client renders.
    """
    if NATIVE_KEY not in session.metadata:
        return session
    return Session(session.session_id, session.messages, {k: v for k, v in session.metadata.items() if k != NATIVE_KEY})


def _chain(previous: str, message: Message) -> str:
    h = hashlib.blake2b(previous.encode("ascii"), digest_size=16)
    h.update(message.to_json())
    return h.hexdigest()


def prefix_digest(messages: Sequence[Message], count: int) -> str:
    """The chained digest of ``messages[:count]`` (``""`` for an empty prefix).

    Only messages the vector's memo does not cover yet are hashed; the memo is
    extended for the next caller.
    """
    if count <= 0:
        return ""
    memo = messages.prefix_memo() if isinstance(messages, FrozenVector) else None
    if memo is not None and len(memo) >= count:
        return str(memo[count - 1])
    done = len(memo) if memo is not None else 0
    previous = str(memo[done - 1]) if memo is not None and done else ""
    fresh = []
    for i in range(done, count):
        previous = _chain(previous, messages[i])
        fresh.append(previous)
    if memo is not None:
        messages.remember_prefix(memo.extend(fresh))  # type: ignore[attr-defined]
    return previous


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
    if count and record.get("prefix_digest") != prefix_digest(session.messages, count):
        return FrozenList(), 0
    return freeze(native), count


def _head_equal(value: list[Any], base: Sequence[Any], k: int) -> bool:
    """``value[:k] == base`` without copying the head: the plugin's list is cut to ``k`` items
    for the comparison and given its tail back (a slice would touch every item twice more)."""
    tail = value[k:]
    del value[k:]
    try:
        return list.__eq__(value, base) is True
    finally:
        value.extend(tail)


def freeze_over(value: Any, base: Sequence[Any]) -> Any:
    """Freeze a list a plugin built on top of ``base`` (a frozen list it was handed).

    ``[*native_messages, msg]`` is how plugins extend a history. Walking the
    whole result would cost O(history) in Python per hook; instead the head
    is compared with ``base`` in C (identical items compare in one pointer
    check) and, when equal, ``base``'s own frozen items are kept: only the
    items after it are frozen. Anything else is frozen as :func:`freeze` does.
    """
    k = len(base)
    if value.__class__ is list and k and len(value) >= k and _head_equal(value, base, k):
        if len(value) == k:
            return base if base.__class__ is FrozenList else FrozenList.from_frozen(base)
        rest = FrozenList.from_frozen([v if v.__class__ in _SCALARS else freeze(v) for v in value[k:]])
        if getattr(base, "_json", False):
            # A JSON-checked history stays checked when its new items are: storing it then
            # walks nothing. An item JSON cannot carry is left for the store to name.
            try:
                rest = freeze_json(rest)
            except InvalidValueError:
                pass
        return FrozenList.joined(base, rest)
    return freeze(value)


def freeze_json_over(value: Any, base: Any, what: str = "value") -> Any:
    """:func:`freeze_json` for a frozen list that extends ``base``, a list it has already checked.

    A stored history grows by a few messages per turn; checking it whole
    again would cost O(history). When ``value`` begins with ``base``'s items
    (compared in C), only the items after them are checked, and ``base``'s
    checked items are kept. Anything else is checked in full.

    Raises:
        InvalidValueError: as :func:`freeze_json`.
    """
    if value is base or (value.__class__ is FrozenList and value._json):
        return value
    if value.__class__ is FrozenList and base.__class__ is FrozenList and base._json and begins_with(value, base):
        tail = list.__getitem__(value, slice(len(base), None))
        new = freeze_json(FrozenList.from_frozen(tail), what)
        if all(a is b for a, b in zip(new, tail)):
            value._json = True  # a fact about its items, which never change: no copy needed
            return value
        out = FrozenList.joined(base, new)
        out._json = True
        return out
    return freeze_json(value, what)


def store_native(session: Session, provider: str, native: Any, core_count: int | None = None) -> Session:
    """Return ``session`` with ``native`` recorded as ``provider``'s history.

    ``core_count`` defaults to all of the session's messages. The record is
    JSON-checked (sessions always are) only where it grew since the record
    the session already holds, so storing costs O(new messages).
    """
    count = len(session.messages) if core_count is None else core_count
    box = session.metadata.get(NATIVE_KEY)
    previous = box.get(provider) if isinstance(box, Mapping) else None
    before = previous.get("messages") if isinstance(previous, Mapping) else None
    messages = freeze_json_over(freeze(native), before, f"native history of {provider!r}")
    record = FrozenDict.from_frozen(
        {"messages": messages, "core_count": count, "prefix_digest": prefix_digest(session.messages, count)}
    )
    record._json = True  # its parts: a checked list, an int, a hex digest
    return session.with_metadata({NATIVE_KEY: freeze_json(FrozenDict.from_frozen({provider: record}))})


def persistable(stored: FrozenList, native: FrozenList, turn_start: int, request_time: FrozenList) -> FrozenList:
    """The native history to keep after a provider call: ``stored`` plus what the call added.

    ``initialize_request`` may add messages (a system prompt, cache markers)
    that are meant for one provider call; keeping them would send them again,
    one more copy per call. When the history after the call still begins with
    the request-time list, only the turn's new messages are kept on top of
    the stored history. A plugin that rewrote earlier messages after the call
    (a ``finalize`` or a ``response_finalize`` action returning a new
    history) is taken at its word.
    """
    if request_time is stored or len(native) < turn_start:
        return native
    if not begins_with(native, request_time):
        return native
    return FrozenList.joined(stored, list.__getitem__(native, slice(turn_start, None)))
