"""What a request names: its id, its session's id, the revision it expects, read from headers and paths.

Every id a client sends is checked against one grammar (:data:`~.tenants.ID_PATTERN`): it can
never hold a ``/``, so no id of one tenant can spell another's (see :mod:`.tenants`). A
revision is read with the ASCII integer grammar of :func:`~.gate.ascii_int`.
"""

from __future__ import annotations

import os

from starlette.requests import Request

from ..http.errors import ApiError
from .gate import ascii_int
from .tenants import ID_PATTERN

__all__ = ["checked_id", "if_match", "path_id", "request_id_of", "session_id_of"]


def _client_id(value: str, what: str, kind: str) -> str:
    if not ID_PATTERN.fullmatch(value):
        raise ApiError(400, kind, f"{what} must be 1 to 128 letters, digits, '_', '-', '.' or ':' (not starting "
                                  f"with '.' or ':'), got {value[:140]!r}", param=what)
    return value


def if_match(request: Request) -> int | None:
    raw = _header(request, "if-match")
    if raw is None:
        return None
    text = raw.strip().removeprefix("W/").strip('"')
    return ascii_int(text, "If-Match", 1, 10**18 - 1, code="invalid_if_match", example='"3"')


def _header(request: Request, name: str) -> str | None:
    """The request's ``name`` header (the first, as ``Headers.get`` gives it), None when it has none.

    ``Headers.get`` finds a missing header by raising a KeyError and catching it: most requests
    carry no X-Session-Id, X-Request-Id or If-Match, and each would pay an exception for it.
    """
    values = request.headers.getlist(name)
    return values[0] if values else None


def request_id_of(request: Request) -> str:
    """The client's ``X-Request-Id`` (so it can cancel a request before any answer), else a fresh one."""
    given = _header(request, "x-request-id")
    if given is None:
        return os.urandom(16).hex()  # uuid4's randomness, without building a UUID
    return _client_id(given, "X-Request-Id", "invalid_request_id")


def session_id_of(request: Request) -> str | None:
    given = _header(request, "x-session-id")
    return None if given is None else _client_id(given, "X-Session-Id", "invalid_session_id")


def path_id(request: Request, name: str) -> str:
    """A session or request id from the route's path, checked against the id grammar."""
    return _client_id(request.path_params[name], name, "invalid_session_id" if name == "session_id"
                      else "invalid_request_id")


def checked_id(value: str, what: str) -> str:
    return _client_id(value, what, "invalid_session_id")
