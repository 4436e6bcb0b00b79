"""The session store's errors: :class:`StoreError` and its kinds (re-exported by :mod:`agent_core.errors`)."""

from __future__ import annotations

from typing import Any

from .root import AgentCoreError
from .root import rebuild as _rebuild

__all__ = [
    "ConflictError", "CorruptRecordError", "SchemaVersionError", "SessionNotFoundError", "StoreError",
    "StoreUnavailableError",
]


class StoreError(AgentCoreError):
    """The session store (:mod:`agent_core.store`) could not do what was asked; ``session_id`` names the session."""

    _keywords = ("session_id",)

    def __init__(self, message: str, *, session_id: str | None = None) -> None:
        super().__init__(message)
        self.session_id = session_id


class ConflictError(StoreError):
    """A write was based on a revision that is no longer the session's latest; nothing was written.

    Another writer saved first. Reload (``current`` is its revision, ``None``
    when the session was deleted), apply the change again and retry:
    ``agent_core.store.run_turn`` does exactly that.
    """

    def __init__(self, session_id: str, *, expected: int, current: int | None) -> None:
        now = "no longer exists" if current is None else f"is at revision {current}"
        base = "to create it" if expected == 0 else f"at revision {expected}"
        super().__init__(f"session {session_id!r} {now}; the write {base} was refused", session_id=session_id)
        self.expected = expected
        self.current = current

    def __reduce__(self) -> Any:
        kwargs = {"expected": self.expected, "current": self.current}
        return _rebuild, (type(self), (self.session_id,), kwargs), self.__dict__


class SessionNotFoundError(StoreError, LookupError):
    """The store holds no session with this id."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no stored session has the id {session_id!r}", session_id=session_id)

    def __reduce__(self) -> Any:
        return type(self), (self.session_id,), self.__dict__


class CorruptRecordError(StoreError):
    """A stored row does not decode to a valid message or session; nothing half-read is returned.

    ``revision`` is the revision that wrote the row (when known) and ``what``
    names the row (``message 12``, ``head``, ``native history 'openai' 3``).
    """

    _keywords = ("session_id", "revision", "what")

    def __init__(self, message: str, *, session_id: str, revision: int | None, what: str) -> None:
        super().__init__(message, session_id=session_id)
        self.revision = revision
        self.what = what


class SchemaVersionError(StoreError):
    """The database was written by a newer agent-core (schema ``found`` > ``supported``); it is left untouched."""

    _keywords = ("found", "supported")

    def __init__(self, message: str, *, found: int, supported: int) -> None:
        super().__init__(message)
        self.found = found
        self.supported = supported


class StoreUnavailableError(StoreError):
    """The database could not do its part just now; nothing was written, and the caller's values are untouched.

    ``reason`` says what the database reported, so an operator knows where to look:

    - ``unreachable``: the connection failed or was dropped (a PostgreSQL restart, a network cut);
    - ``busy``: another writer held the database past the store's busy timeout (SQLite);
    - ``read_only``: the file or its file system refuses writes;
    - ``disk_full``: no room left for the write;
    - ``io``: the operating system reported an I/O error.

    The first two pass on their own, so ``retry_after`` (seconds) suggests when to try
    again; the others need an operator, and ``retry_after`` is ``None``. The server answers
    503 either way, with ``retry-after`` when there is one.
    """

    _keywords = ("session_id", "reason", "retry_after")

    def __init__(self, message: str, *, reason: str, retry_after: float | None = None,
                 session_id: str | None = None) -> None:
        super().__init__(message, session_id=session_id)
        self.reason = reason
        self.retry_after = retry_after
