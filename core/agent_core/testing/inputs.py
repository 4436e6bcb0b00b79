"""What a test hands the harness, made into what the hooks take: messages as dicts, a session.

A test writes the shortest thing that says what it means (a string for an assistant
message, one message for a list of one, a session's dict form); the harness turns it
into the values the engine would hand the plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import Message, PartialMessage, Session

__all__ = ["as_messages", "session_of"]


def _as_message(m: Any) -> Any:
    if isinstance(m, (Message, PartialMessage)):
        return m.to_dict()
    if isinstance(m, str):
        return {"role": "assistant", "content": m}
    return m


def as_messages(items: Any) -> list[Any]:
    """A message, a string or a list of them, as a list of message dicts (None: an empty list)."""
    if items is None:
        return []
    if isinstance(items, (str, Mapping, Message, PartialMessage)):
        items = [items]
    return [_as_message(m) for m in items]


def session_of(session: Any) -> Session:
    """:meth:`PluginHarness.action`'s session: a Session, its dict form, or None for an empty one.

    Raises:
        TypeError: anything else, saying what the harness needs.
    """
    if session is None:
        return Session(session_id="harness-session")
    if isinstance(session, Session):
        return session
    if isinstance(session, Mapping):
        return Session.from_dict(session)
    raise TypeError(f"action() needs a Session (or its dict form, Session.to_dict()), got {type(session).__name__}")
