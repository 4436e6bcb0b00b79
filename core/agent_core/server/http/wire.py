"""The HTTP plumbing the routes share: JSON and SSE frames, hang-ups, early failures, errors, client messages.

Kept apart from the routes so each route module reads as what it answers.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import msgspec
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from ...errors import (
    ActionInputError,
    ConfigError,
    ConflictError,
    InvalidArgumentError,
    InvalidValueError,
    LLMError,
    PluginError,
    ProviderRequestCancelled,
    StoreError,
)
from ...types import Message, Session
from .errors import ApiError
from .failures import Failure, dialect_of, failure_of, failure_of_info, render

__all__ = ["LIBRARY_ERRORS", "ON_HANGUP", "SSE_HEADERS", "ConflictNote", "etag", "json_bytes", "message_of", "on_error",
           "plain", "session_of", "sse_frame", "until_output", "watch_disconnect", "watch_hangup"]

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def json_bytes(value: Any) -> bytes:
    """``value`` as compact JSON, by msgspec's encoder (several times faster than ``json.dumps`` per chunk).

    A string msgspec refuses (a lone surrogate, which a plugin can produce) and a type it
    does not know fall back to ``json.dumps``, which escapes the first and names the second.
    """
    try:
        return _encode(value)
    except (UnicodeEncodeError, TypeError):
        return json.dumps(value).encode()


_encode = msgspec.json.Encoder().encode


def sse_frame(data: Any) -> bytes:
    """One ``data:`` frame; the payload is copied once (``a + b + c`` copies it twice: a big session's
    ``done`` event is megabytes, copied on the event loop)."""
    return b"".join((b"data: ", data if isinstance(data, bytes) else json_bytes(data), b"\n\n"))


def etag(revision: int) -> dict[str, str]:
    return {"etag": f'"{revision}"'}


async def watch_disconnect(request: Request, on_gone: Callable[[], Any]) -> None:
    """Wait for the client to hang up, then call ``on_gone`` (cancels the upstream request)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            on_gone()
            return


#: the ASGI ``extensions`` key under which ``agent-core serve``'s connection offers
#: ``watch(on_gone) -> stop``: it calls ``on_gone`` itself if it is lost before the response is complete
ON_HANGUP = "agent_core.on_hangup"


def watch_hangup(request: Request, on_gone: Callable[[], Any]) -> Callable[[], None]:
    """Have ``on_gone`` called (on the loop, soon) if the client hangs up mid-request; returns how to stop that.

    Under ``agent-core serve`` the connection calls it when it is lost (:data:`ON_HANGUP`), so
    nothing waits per request; served any other way, a task waits on ``receive`` for the
    disconnect (:func:`watch_disconnect`). That task is a real share of a short request's CPU,
    which is why the connection's own hook comes first.
    """
    extensions = request.scope.get("extensions")
    watch = extensions.get(ON_HANGUP) if extensions else None
    if watch is not None:
        return watch(on_gone)  # type: ignore[no-any-return]
    return asyncio.ensure_future(watch_disconnect(request, on_gone)).cancel


async def until_output(events: AsyncIterator[Any], rid: list[str] | None = None,
                       dialect: str = "native") -> tuple[list[Any], Response | None]:
    """Read events up to the first output; a failure before it becomes an error response with its status.

    Until the first byte of the body is sent, the status can still say what went wrong
    (429 with retry-after, 400 for a bad config...), so an early ``error`` event is not streamed.
    An ``answered`` event (the config's ``announce_answer``) counts as output: the upstream has
    answered, so the status is known and the headers can go before the first token.
    """
    first: list[Any] = []
    async for event in events:
        first.append(event)
        kind = getattr(event, "type", None)
        if kind == "start" and rid is not None:
            rid.append(event.request_id)
        if kind in ("answered", "partial", "final", "error", "done"):
            break
    if first and first[-1].type == "error":
        info = first[-1].error
        async for _ in events:
            pass
        return first, render(failure_of_info(info), dialect)
    return first, None


LIBRARY_ERRORS = (ActionInputError, ConfigError, InvalidArgumentError, InvalidValueError, LLMError, PluginError,
                   ProviderRequestCancelled, StoreError)


class ConflictNote:
    """The If-Match turn's save lost: told to the client as a ``conflict`` event."""

    def __init__(self, exc: ConflictError) -> None:
        self.exc = exc


def plain(value: Any) -> Any:
    from ... import thaw

    return thaw(value)


def message_of(value: Any, where: str) -> Message:
    """A client's message (a string is a user message; an object is ``schemas/message.schema.json``)."""
    if not isinstance(value, (str, Mapping)):
        raise ApiError(400, "invalid_request_error", f"{where} must be a string or a message object", param=where)
    try:
        return Message("user", value) if isinstance(value, str) else Message.from_dict(value)
    except (TypeError, ValueError, KeyError) as exc:
        raise ApiError(400, "invalid_request_error", f"{where}: {exc}", param=where) from None


def session_of(session_id: str, messages: list[Message], metadata: Mapping[str, Any]) -> Session:
    """A new session from a client's parts; a value the session refuses is a 400 naming the part."""
    try:
        return Session(session_id, messages, metadata)
    except (TypeError, ValueError, KeyError) as exc:
        raise ApiError(400, "invalid_request_error", f"session: {exc}", param="metadata") from None


async def on_error(request: Request, exc: Exception) -> Response:
    """Every refusal as JSON, in the dialect of the route (OpenAI's, Anthropic's or the server's own)."""
    dialect = dialect_of(request.url.path)
    if isinstance(exc, HTTPException):
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        detail = f"{request.method} {request.url.path}: {exc.detail}"
        failure = Failure(status=exc.status_code, kind=kind, message=detail, headers=dict(exc.headers or {}))
    elif isinstance(exc, ApiError) or type(exc).__module__.startswith("agent_core"):
        failure = failure_of(exc)
    else:
        failure = Failure(status=500, kind="internal_error",
                          message=f"{type(exc).__name__} while serving {request.url.path}")
    return render(failure, dialect)
