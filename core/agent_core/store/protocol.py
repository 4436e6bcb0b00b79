"""The ``SessionStore`` protocol: what any session store offers, sync and async."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .. import Session
from .values import Revision, SessionInfo, Stored

__all__ = ["SessionStore"]


@runtime_checkable
class SessionStore(Protocol):
    """Sessions saved under optimistic revisions.

    Every session starts at revision 1 (``create``); each ``put`` names the
    revision it was derived from and, when that is still the latest, stores
    the session at the next one. A put from a stale revision raises
    :class:`~agent_core.errors.ConflictError` and changes nothing, so two
    handlers racing on one session can never overwrite each other's turn.
    Each method has an async twin with an ``a`` prefix.
    """

    def create(self, session: Session) -> int:
        """Store a new session at revision 1. Raises ConflictError when the id exists."""
        ...

    def get(self, session_id: str) -> Stored:
        """The latest revision. Raises SessionNotFoundError, CorruptRecordError."""
        ...

    def put(self, session: Session, *, expected_revision: int) -> int:
        """Save at ``expected_revision + 1`` (0 means: create). Raises ConflictError, SessionNotFoundError."""
        ...

    def list(self, *, limit: int = 100, after: str | None = None, prefix: str | None = None) -> list[SessionInfo]:
        """Session heads ordered by id, after the id ``after``; only ids starting with ``prefix`` when given."""
        ...

    def delete(self, session_id: str, *, expected_revision: int | None = None) -> None:
        """Delete a session (only at ``expected_revision`` when given). Raises SessionNotFoundError, ConflictError."""
        ...

    def history(self, session_id: str) -> list[Revision]:
        """What each revision added, and when, oldest first. Raises SessionNotFoundError."""
        ...

    def close(self) -> None: ...

    async def acreate(self, session: Session) -> int: ...

    async def aget(self, session_id: str) -> Stored: ...

    async def aput(self, session: Session, *, expected_revision: int) -> int: ...

    async def alist(self, *, limit: int = 100, after: str | None = None,
                    prefix: str | None = None) -> list[SessionInfo]: ...

    async def adelete(self, session_id: str, *, expected_revision: int | None = None) -> None: ...

    async def ahistory(self, session_id: str) -> list[Revision]: ...

    async def aclose(self) -> None: ...
