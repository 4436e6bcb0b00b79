"""A failure described once, and the three shapes it leaves the server in.

The server speaks three dialects: its own routes (``/v1/sessions``...), OpenAI's
(``/v1/chat/completions``, ``/v1/models``) and Anthropic's (``/v1/messages``). Clients
of the two facades read the error as their API writes it: the ``openai`` SDK picks its
exception by status and reads ``code`` and ``param``; LiteLLM tells quota from rate
limit by ``code``; the ``anthropic`` SDK reads ``error.type``. So a failure is first a
:class:`Failure` (the status, our typed class, the message, and what the upstream API
itself said, when one answered) and only then a body in the dialect of the route.

When an upstream API answered, its own status, type, code, param and message are the
truth and are passed on verbatim, with its rate-limit headers; our class rides along in
``agent_core_type`` for clients that want it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
from starlette.responses import JSONResponse

from ...errors import ConfigError, ConflictError, MissingAPIKeyError
from .errors import ApiError, status_for, status_for_name

__all__ = ["Failure", "dialect_of", "failure_of", "failure_of_info", "render", "sse_error_frame"]


class Failure(msgspec.Struct, frozen=True, kw_only=True):
    """What went wrong, before it is written in any API's shape.

    ``kind`` is a library error's class name or a server refusal's short type
    (``model_not_found``); ``extra`` holds fields only the server's own routes
    send (``current_revision``); ``upstream`` is the API's own account of it (an
    :class:`~agent_core.errors.UpstreamDetail`) when a provider's API answered.
    """

    status: int
    kind: str
    message: str
    param: str | None = None
    provider: str | None = None
    headers: dict[str, str] = {}
    extra: dict[str, Any] = {}
    upstream: Any = None


def _retry_after(seconds: Any) -> dict[str, str]:
    if seconds is None:
        return {}
    return {"retry-after": str(max(0, int(-(-float(seconds) // 1))))}


#: upstream headers that would name the upstream's request where the client expects its own
_NOT_PASSED = frozenset({"x-request-id", "request-id"})


def _upstream_headers(upstream: Any) -> dict[str, str]:
    """The upstream's rate-limit and retry headers, which a client's retry logic reads."""
    headers = getattr(upstream, "headers", None) or {}
    return {k: v for k, v in headers.items() if k not in _NOT_PASSED}


def failure_of(exc: BaseException) -> Failure:
    """The failure a raised error stands for (a server refusal or a library error)."""
    if isinstance(exc, ApiError):
        return Failure(status=exc.status, kind=exc.type, message=exc.message, param=exc.param,
                       headers=dict(exc.headers))
    upstream = getattr(exc, "upstream", None)
    headers = {**_retry_after(getattr(exc, "retry_after", None)), **_upstream_headers(upstream)}
    extra: dict[str, Any] = {}
    if isinstance(exc, ConflictError):
        extra["current_revision"] = exc.current
        if exc.current is not None:
            headers["etag"] = f'"{exc.current}"'
    if isinstance(exc, MissingAPIKeyError):
        return _no_key(exc.plugins[0] if exc.plugins else None, str(exc))
    param = exc.key if isinstance(exc, ConfigError) else None
    return Failure(status=status_for(exc), kind=type(exc).__name__, message=str(exc), param=param,
                   provider=getattr(exc, "provider", None) or None, headers=headers, extra=extra, upstream=upstream)


_KEY_VARIABLE = re.compile(r"\$([A-Z][A-Z0-9_]*_API_KEY)")


def _no_key(provider: str | None, message: str) -> Failure:
    """A provider with no key, told to a client: the server's configuration is at fault, not the request.

    The library's message advises a CLI user (its flags); a client of the server can do
    nothing with that, so it is told whose key is missing and who sets it.
    """
    found = _KEY_VARIABLE.search(message)
    where = f"${found.group(1)} in the server's environment" if found else "the server's environment"
    who = provider or "the provider"
    return Failure(status=500, kind="MissingAPIKeyError", provider=provider,
                   message=f"{who} has no API key on this server; its operator must set one ({where}, or "
                           "api_key in the server's config)")


def failure_of_info(info: Any) -> Failure:
    """The failure an ``error`` event describes (its exception is gone; its ``ErrorInfo`` is left)."""
    if info.type == "MissingAPIKeyError":
        return _no_key(info.plugin, info.message)
    upstream = getattr(info, "upstream", None)
    headers = {**_retry_after(info.retry_after), **_upstream_headers(upstream)}
    return Failure(status=status_for_name(info.type), kind=info.type, message=info.message,
                   provider=getattr(info, "plugin", None), headers=headers, upstream=upstream)


# -- the dialects --------------------------------------------------------------------------------------

def dialect_of(path: str) -> str:
    """Which API a route speaks: ``openai``, ``anthropic`` or the server's ``native`` one."""
    if path == "/v1/messages" or path.startswith("/v1/messages/"):
        return "anthropic"
    if path.startswith(("/v1/chat/", "/v1/models", "/v1/completions", "/v1/responses")):
        return "openai"
    return "native"


#: OpenAI's types by status; any other 4xx is an invalid_request_error, a 5xx a server_error
_OPENAI_TYPES = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}
_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                    404: "not_found_error", 408: "timeout_error", 409: "invalid_request_error",
                    413: "request_too_large", 415: "invalid_request_error", 429: "rate_limit_error",
                    503: "overloaded_error", 504: "timeout_error", 529: "overloaded_error"}
#: Anthropic's documented error types: an upstream type outside them is not Anthropic's to pass on
_ANTHROPIC_KNOWN = frozenset({*_ANTHROPIC_TYPES.values(), "api_error", "billing_error"})
#: our classes whose OpenAI code a client may test for
_CODES = {"ContextLengthError": "context_length_exceeded", "RateLimitError": "rate_limit_exceeded",
          "QuotaExceededError": "insufficient_quota", "ContentFilterError": "content_filter"}
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def _code(kind: str) -> str:
    """A stable snake_case code for our class or refusal (``ConfigNotAllowedError`` -> ``config_not_allowed``)."""
    if kind in _CODES:
        return _CODES[kind]
    if kind[:1].isupper():
        return _CAMEL.sub("_", kind).lower().removesuffix("_error")
    return kind


def openai_error_type(status: int) -> str:
    return _OPENAI_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")


def anthropic_error_type(status: int) -> str:
    return _ANTHROPIC_TYPES.get(status, "api_error")


#: upstream statuses about the server's own credentials: the client's are fine, so it gets ours (502)
_OPERATORS_FAULT = frozenset({401, 403, 407})


def _status(failure: Failure) -> int:
    """The upstream's own status when it answered with an error one (a 500 stays a 500), else ours.

    An upstream 401 or 403 says the operator's key is wrong; passed on, it would tell the
    client that its own token is, so it stays our 502.
    """
    status = getattr(failure.upstream, "status", None)
    if isinstance(status, int) and 400 <= status <= 599 and status not in _OPERATORS_FAULT:
        return status
    return failure.status


def openai_body(failure: Failure) -> dict[str, Any]:
    """``{"error": {"message", "type", "param", "code"}}``, the upstream's values when there is one."""
    up = failure.upstream
    status = _status(failure)
    if up is not None:
        error = {"message": up.message, "type": up.type or openai_error_type(status), "param": up.param,
                 "code": up.code}
    elif failure.kind in (*_OPENAI_TYPES.values(), "invalid_request_error", "server_error"):
        error = {"message": failure.message, "type": failure.kind, "param": failure.param, "code": None}
    else:
        error = {"message": failure.message, "type": openai_error_type(status), "param": failure.param,
                 "code": _code(failure.kind)}
    error["agent_core_type"] = failure.kind
    if failure.provider:
        error["provider"] = failure.provider
    return {"error": error}


def anthropic_body(failure: Failure) -> dict[str, Any]:
    """``{"type": "error", "error": {"type", "message"}}``, the upstream's values when they are Anthropic's."""
    up = failure.upstream
    kind = anthropic_error_type(_status(failure))
    message = failure.message
    if up is not None:
        message = up.message
        if up.type in _ANTHROPIC_KNOWN:
            kind = up.type
    return {"type": "error", "error": {"type": kind, "message": message}}


def native_body(failure: Failure) -> dict[str, Any]:
    """The server's own routes: ``{"error": {"type": <our class>, "message", ...}}``."""
    error: dict[str, Any] = {"type": failure.kind, "message": failure.message}
    if failure.param is not None:
        error["param"] = failure.param
    if failure.provider:
        error["provider"] = failure.provider
    error.update(failure.extra)
    return {"error": error}


def render(failure: Failure, dialect: str) -> JSONResponse:
    """The response for ``failure`` in ``dialect``; the facades answer with the upstream's own status."""
    if dialect == "openai":
        return JSONResponse(openai_body(failure), _status(failure), headers=failure.headers)
    if dialect == "anthropic":
        return JSONResponse(anthropic_body(failure), _status(failure), headers=failure.headers)
    return JSONResponse(native_body(failure), failure.status, headers=failure.headers)


def sse_error_frame(failure: Failure, dialect: str) -> bytes:
    """An error after a stream began (the status is sent): a ``data:`` frame with the dialect's body."""
    body = openai_body(failure) if dialect == "openai" else native_body(failure)
    return b"data: " + json.dumps(body).encode() + b"\n\n"
