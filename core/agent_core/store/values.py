"""What the session store hands back: a session at a revision, list entries, history entries."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

from .. import Message, Session

__all__ = ["Revision", "SessionInfo", "Stored", "iso_time"]


def iso_time(seconds: float) -> str:
    """A stored time (Unix seconds) as people and the HTTP API show it: ISO 8601, UTC, to the millisecond."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Stored(msgspec.Struct, frozen=True):
    """A session as stored, and the revision it is at.

    Pass ``revision`` back as ``expected_revision`` when saving what you
    derived from ``session``: the save succeeds only if nobody saved since.
    """

    session: Session
    revision: int


class SessionInfo(msgspec.Struct, frozen=True):
    """One entry of :meth:`SessionStore.list`: a session's head, without its messages.

    Times are Unix seconds (UTC).
    """

    session_id: str
    revision: int
    message_count: int
    created_at: float
    updated_at: float


class Revision(msgspec.Struct, frozen=True):
    """One entry of :meth:`SessionStore.history`: what one saved revision added, and when.

    ``first_index`` is the position of ``messages[0]`` in the session.
    ``replaced`` is true when the revision did not extend the stored messages
    but replaced them (an application rewrote or removed earlier messages): the
    whole list was written again at ``first_index`` 0, and the rows of the
    replaced messages are gone, so earlier entries keep their revision, time
    and count but list no messages any more.
    """

    revision: int
    created_at: float
    first_index: int
    added: int
    replaced: bool
    messages: list[Message]
