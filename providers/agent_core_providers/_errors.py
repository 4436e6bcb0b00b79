"""Translating what an HTTP API said into the typed errors of :mod:`agent_core.errors`.

Two inputs end here: an error *response* (status, headers, body) and an error
*event* in the middle of a stream (Anthropic's ``event: error``, the
``{"error": ...}`` chunk of OpenAI-compatible servers). Both carry an error
object shaped ``{"type"?, "code"?, "message"}``; the status (when there is
one) picks the class from :data:`STATUS_ERRORS`, the error ``type`` from
:data:`TYPE_ERRORS`, and the text or code can still refine it to
:class:`ContextLengthError` / :class:`ContentFilterError`, because APIs report
those as generic 400s.

Every message passes through :func:`scrub`, so an API key echoed back by a
server (some proxies do) never reaches an exception, a log or a session.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

import httpx
import msgspec

from agent_core.errors import (
    AuthenticationError,
    ContentFilterError,
    ContextLengthError,
    InvalidRequestError,
    LLMError,
    LLMTimeoutError,
    ProviderUnavailableError,
    RateLimitError,
)

__all__ = [
    "STATUS_ERRORS",
    "TYPE_ERRORS",
    "error_from_event",
    "error_from_response",
    "error_from_transport",
    "parse_retry_after",
    "scrub",
]

#: HTTP status -> error class; statuses not listed fall back by range (4xx / 5xx).
STATUS_ERRORS: Mapping[int, type[LLMError]] = {
    401: AuthenticationError,
    403: AuthenticationError,
    408: LLMTimeoutError,
    413: ContextLengthError,  # Anthropic's request_too_large: the remedy is the same
    429: RateLimitError,
    529: ProviderUnavailableError,  # Anthropic: overloaded
}

#: The error ``type`` (or ``code``) the API put in the body -> error class.
TYPE_ERRORS: Mapping[str, type[LLMError]] = {
    "authentication_error": AuthenticationError,
    "permission_error": AuthenticationError,
    "invalid_api_key": AuthenticationError,
    "rate_limit_error": RateLimitError,
    "rate_limit_exceeded": RateLimitError,
    "insufficient_quota": RateLimitError,
    "overloaded_error": ProviderUnavailableError,
    "api_error": ProviderUnavailableError,
    "server_error": ProviderUnavailableError,
    "timeout_error": LLMTimeoutError,
    "request_too_large": ContextLengthError,
    "context_length_exceeded": ContextLengthError,
    "string_above_max_length": ContextLengthError,
    "content_filter": ContentFilterError,
    "content_policy_violation": ContentFilterError,
    "invalid_request_error": InvalidRequestError,
    "not_found_error": InvalidRequestError,
}

# Phrases the APIs (and compatible servers: vLLM, llama.cpp, Ollama) use for
# an over-long prompt or a policy refusal inside a plain 400.
_CONTEXT_TEXT = re.compile(
    r"context.length|context window|maximum context|prompt is too long|too many tokens"
    r"|exceeds? the (?:model'?s? )?(?:maximum|max)|input is too long",
    re.IGNORECASE,
)
_FILTER_TEXT = re.compile(r"content.(?:filter|policy|management)|safety system", re.IGNORECASE)
_REDACTED = "***"
_body_decoder = msgspec.json.Decoder()


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every non-empty secret replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, _REDACTED)
    return text


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _error_object(body: Any) -> Mapping[str, Any]:
    """The ``{"type", "code", "message"}`` object inside an error body, or ``{}``."""
    if not isinstance(body, Mapping):
        return {}
    inner = body.get("error")
    if isinstance(inner, Mapping):
        return inner
    if isinstance(inner, str):  # some compatible servers: {"error": "text"}
        return {"message": inner}
    if "message" in body or "detail" in body:
        return {"message": body.get("message") or body.get("detail")}
    return {}


def _classify(status: int | None, err: Mapping[str, Any], message: str) -> type[LLMError]:
    by_kind = next(
        (TYPE_ERRORS[k] for k in (err.get("code"), err.get("type")) if isinstance(k, str) and k in TYPE_ERRORS),
        None,
    )
    if by_kind in (ContextLengthError, ContentFilterError):
        return by_kind  # the API named the cause; trust it over the status
    base = (
        (STATUS_ERRORS.get(status) if status is not None else None)
        or (ProviderUnavailableError if status is not None and status >= 500 else None)
        or by_kind
        or (InvalidRequestError if status is not None else LLMError)
    )
    if base is InvalidRequestError or base is LLMError:
        # A generic rejection: over-long prompts and refusals hide in the text.
        if _CONTEXT_TEXT.search(message):
            return ContextLengthError
        if _FILTER_TEXT.search(message):
            return ContentFilterError
    return base


def _build(cls: type[LLMError], message: str, provider: str, status: int | None, retry_after: float | None) -> LLMError:
    if cls is RateLimitError:
        return RateLimitError(message, retry_after=retry_after, provider=provider, status_code=status)
    error = cls(message, provider=provider, status_code=status)
    if retry_after is not None:
        # A 503/529 may say when to come back too; the retry loop reads it.
        error.retry_after = retry_after  # type: ignore[attr-defined]
    return error


def error_from_response(
    provider: str,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    secrets: Iterable[str | None] = (),
) -> LLMError:
    """The typed error for an HTTP error response, keeping the API's own message.

    Args:
        provider: provider name stored on the error.
        status: the HTTP status code (>= 400).
        headers: response headers (``retry-after`` is read for 429/503).
        body: the raw response body (JSON error object or anything else).
        secrets: strings to scrub from the message (the API key).
    """
    try:
        decoded: Any = _body_decoder.decode(body) if body else None
    except msgspec.DecodeError:
        decoded = None
    err = _error_object(decoded)
    message = err.get("message")
    if not isinstance(message, str) or not message:
        text = body.decode("utf-8", "replace").strip()
        message = text[:500] if text else f"HTTP {status} with an empty body"
    message = scrub(message, secrets)
    return _build(_classify(status, err, message), message, provider, status, parse_retry_after(headers))


def error_from_event(provider: str, payload: Any, secrets: Iterable[str | None] = ()) -> LLMError:
    """The typed error for an error event inside a stream (no HTTP status)."""
    err = _error_object(payload)
    message = err.get("message") if isinstance(err.get("message"), str) else None
    message = scrub(message or "the stream reported an error without a message", secrets)
    cls = _classify(None, err, message)
    status = err.get("code") if isinstance(err.get("code"), int) else None
    return _build(cls, message, provider, status, None)


def error_from_transport(provider: str, exc: httpx.HTTPError, secrets: Iterable[str | None] = ()) -> LLMError:
    """The typed error for a failure below HTTP: timeouts, refused or dropped connections."""
    detail = scrub(str(exc) or type(exc).__name__, secrets)
    if isinstance(exc, httpx.TimeoutException):
        return LLMTimeoutError(f"the API did not answer in time ({type(exc).__name__}: {detail})", provider=provider)
    if isinstance(exc, httpx.RemoteProtocolError):
        return ProviderUnavailableError(f"the connection closed early ({detail})", provider=provider)
    if isinstance(exc, httpx.TransportError):
        return ProviderUnavailableError(f"could not reach the API ({type(exc).__name__}: {detail})", provider=provider)
    return LLMError(f"{type(exc).__name__}: {detail}", provider=provider)
