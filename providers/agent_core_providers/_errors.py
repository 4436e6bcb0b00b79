"""Translating what an HTTP API said into the typed errors of :mod:`agent_core.errors`.

Two inputs end here: an error *response* (status, headers, body) and an error
*event* in the middle of a stream (Anthropic's ``event: error``, the
``{"error": ...}`` chunk of OpenAI-compatible servers). Both carry an error
object shaped ``{"type"?, "code"?, "message"}``; the status (when there is
one) picks the class from :data:`STATUS_ERRORS`, the error ``type`` from
:data:`TYPE_ERRORS`, and the text or code can still refine it to
:class:`ContextLengthError` / :class:`ContentFilterError`, because APIs report
those as generic 400s. OpenAI's ``insufficient_quota`` (and Anthropic's
spend limit) is a 429 that waiting never cures: :class:`QuotaExceededError`,
which is not retried.

Every error built here also keeps the API's own status, type, code, param,
message and rate-limit headers in ``.upstream`` (see :mod:`._upstream`).

Every message passes through :func:`~._scrub.scrub` *before* it is cut to
length (:func:`~._scrub.bounded`), so an API key echoed back by a server
never reaches an exception, a log or a session, not even half of it.
"""

from __future__ import annotations

import email.utils
import math
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
    QuotaExceededError,
    RateLimitError,
    RedirectError,
)

from ._scrub import bounded, scrub
from ._upstream import scrubbed_upstream, upstream_detail

__all__ = [
    "STATUS_ERRORS",
    "RETRY_AFTER_CEILING",
    "TYPE_ERRORS",
    "bounded",
    "error_from_event",
    "error_from_redirect",
    "error_from_response",
    "error_from_transport",
    "parse_retry_after",
    "scrub",
    "scrub_error",
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
    "insufficient_quota": QuotaExceededError,  # OpenAI: no credit left; a 429 all the same
    "enforced_spend_limit_reached": QuotaExceededError,  # Anthropic's 429 details.error_code
    "overloaded_error": ProviderUnavailableError,
    "api_error": ProviderUnavailableError,
    "server_error": ProviderUnavailableError,
    "timeout_error": LLMTimeoutError,
    "request_too_large": ContextLengthError,
    "context_length_exceeded": ContextLengthError,
    "exceed_context_size_error": ContextLengthError,  # llama.cpp's server (400, older builds 500)
    "model_context_window_exceeded": ContextLengthError,
    "string_above_max_length": ContextLengthError,
    "content_filter": ContentFilterError,
    "content_policy_violation": ContentFilterError,
    "invalid_request_error": InvalidRequestError,
    "not_found_error": InvalidRequestError,
}

# Phrases the APIs and compatible servers use for an over-long prompt inside a
# plain 400 (tests/providers/test_transport_errors.py holds one real wording each):
# OpenAI, DeepSeek and vLLM "maximum context length is N tokens", Anthropic
# "prompt is too long", Mistral "too large for model with N maximum context
# length", vLLM "longer than the maximum model length", llama.cpp "exceeds the
# available context size", Ollama "exceeded max context length".
_CONTEXT_TEXT = re.compile(
    r"context.length|context window|maximum context|context.size|prompt is too long|too many tokens"
    r"|exceeds? the (?:model'?s? )?(?:maximum|max)|input is too long|maximum model length|too large for model",
    re.IGNORECASE,
)
# llama.cpp's server has also reported an overflow as a 500 ``server_error``;
# only wordings this specific override a 5xx (retrying would never help).
_CONTEXT_TEXT_5XX = re.compile(r"context size has been exceeded|exceeds the available context size", re.IGNORECASE)
_FILTER_TEXT = re.compile(r"content.(?:filter|policy|management)|safety system", re.IGNORECASE)
_body_decoder = msgspec.json.Decoder()


def scrub_error(error: LLMError, secrets: Iterable[str | None]) -> LLMError:
    """``error`` with its message and upstream detail scrubbed in place (for errors built without the secrets)."""
    secrets = tuple(secrets)
    message = scrub(error.message, secrets)
    if message != error.message:
        error.message = message
        error.args = (message, *error.args[1:])
    upstream = getattr(error, "upstream", None)
    if upstream is not None:
        error.upstream = scrubbed_upstream(upstream, secrets)
    return error


#: Ceiling for a ``retry-after``: ``inf`` ("never") becomes this, a finite value JSON can carry
#: (an error event's ``retry_after``) and longer than any sensible ``max_retry_wait_s``.
RETRY_AFTER_CEILING = 1e9


def _seconds(value: float) -> float | None:
    # NaN says nothing; infinity ("never") is capped, so the wait cap still rejects it.
    return None if math.isnan(value) else min(max(0.0, value), RETRY_AFTER_CEILING)


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or HTTP date).

    ``NaN`` counts as absent; ``inf`` (and anything longer) becomes
    :data:`RETRY_AFTER_CEILING`, which the caller's cap turns into "do not
    wait"; negative values and past dates mean 0.
    """
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            seconds = _seconds(float(ms) / 1000.0)
        except ValueError:
            seconds = None
        if seconds is not None:
            return seconds
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return _seconds(float(value))
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
        # vLLM and Mistral put the error object at the top level: keep its type, code and param too.
        top = {k: body[k] for k in ("type", "code", "param") if k in body}
        return {**top, "message": body.get("message") or body.get("detail")}
    return {}


def _kinds(err: Mapping[str, Any]) -> tuple[Any, ...]:
    """What names the cause, most specific first: a details code (Anthropic), the code, the type."""
    details = err.get("details")
    return (details.get("error_code") if isinstance(details, Mapping) else None, err.get("code"), err.get("type"))


def _classify(status: int | None, err: Mapping[str, Any], message: str) -> type[LLMError]:
    by_kind = next((TYPE_ERRORS[k] for k in _kinds(err) if isinstance(k, str) and k in TYPE_ERRORS), None)
    if by_kind in (ContextLengthError, ContentFilterError, QuotaExceededError):
        return by_kind  # the API named the cause; trust it over the status
    if status is not None and 400 <= status < 500 and by_kind in (ProviderUnavailableError, LLMTimeoutError):
        by_kind = None  # a 4xx is the request's fault whatever type a compatible server put on it
    if status is not None and status >= 500 and _CONTEXT_TEXT_5XX.search(message):
        return ContextLengthError
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


def _build(
    cls: type[LLMError], message: str, provider: str, status: int | None, retry_after: float | None, upstream: Any
) -> LLMError:
    if issubclass(cls, RateLimitError):
        return cls(message, retry_after=retry_after, provider=provider, status_code=status, upstream=upstream)
    error = cls(message, provider=provider, status_code=status, upstream=upstream)
    if retry_after is not None:
        # A 503/529 may say when to come back too; the retry loop reads it.
        error.retry_after = retry_after  # type: ignore[attr-defined]
    return error


#: Longest error text kept from a response body that is not a JSON error object.
BODY_TEXT_LIMIT = 500
_DOUBLED_VERSION = re.compile(r"/(v\d+)/\1(?=/|$)")


def error_from_response(
    provider: str,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    secrets: Iterable[str | None] = (),
    *,
    url: str | None = None,
    method: str = "POST",
) -> LLMError:
    """The typed error for an HTTP error response, keeping the API's own message.

    Args:
        provider: provider name stored on the error.
        status: the HTTP status code (>= 400).
        headers: response headers (``retry-after`` is read for 429/503).
        body: the raw response body (JSON error object or anything else,
            invalid UTF-8 included: the status still decides the class).
        secrets: strings to scrub from the message (the API key).
        url: the URL that was tried; a 404 names it (a wrong ``base_url`` is
            the usual cause), and says so when it repeats a version segment.
        method: the HTTP method, for the same message.
    """
    secrets = tuple(secrets)
    try:
        decoded: Any = _body_decoder.decode(body) if body else None
    except (msgspec.DecodeError, UnicodeDecodeError):  # msgspec raises the latter for bad UTF-8 in a string
        decoded = None
    err = _error_object(decoded)
    message = err.get("message")
    if isinstance(message, str) and message:
        message = scrub(message, secrets)
    else:
        text = body.decode("utf-8", "replace").strip()
        message = bounded(text, secrets, BODY_TEXT_LIMIT) if text else f"HTTP {status} with an empty body"
    cls = _classify(status, err, message)
    upstream = upstream_detail(status, err, message, headers, secrets)
    if status == 404 and url:
        where = scrub(url, secrets)
        message = f"{message} (404 for {method} {where})"
        doubled = _DOUBLED_VERSION.search(where)
        if doubled:
            message += f"; the URL repeats '/{doubled.group(1)}': should base_url end without it?"
    return _build(cls, message, provider, status, parse_retry_after(headers), upstream)


def error_from_event(provider: str, payload: Any, secrets: Iterable[str | None] = ()) -> LLMError:
    """The typed error for an error event inside a stream (or a 200 body holding an error object).

    Its upstream detail has no status (the response said 200) and no
    headers; type, code and param are the event's own.
    """
    secrets = tuple(secrets)
    err = _error_object(payload)
    message = err.get("message") if isinstance(err.get("message"), str) else None
    message = scrub(message or "the stream reported an error without a message", secrets)
    cls = _classify(None, err, message)
    status = err.get("code") if isinstance(err.get("code"), int) else None
    return _build(cls, message, provider, status, None, upstream_detail(None, err, message, None, secrets))


#: the longest ``Location`` quoted in a :class:`RedirectError` (a URL, not a document)
LOCATION_LIMIT = 500


def error_from_redirect(provider: str, status: int, headers: Mapping[str, str], secrets: Iterable[str | None] = (),
                        url: str | None = None) -> RedirectError:
    """The error for a 3xx answer: never followed, since the request carries the key.

    It names the status and the ``Location`` (scrubbed, bounded), and says what to fix:
    most often an ``http://`` base URL that the API sends to ``https://``.
    """
    location = headers.get("location")
    shown = bounded(location, secrets, LOCATION_LIMIT) if location else None
    api = f"the API at {where}" if (where := origin_of(url)) else "the API"
    to = f" to {shown}" if shown else " without a Location"
    message = (f"{api} answered {status}, a redirect{to}; redirects are not followed (the request carries the "
               "key), so set base_url to where the API answers")
    if url and url.startswith("http://") and shown and shown.startswith("https://"):
        message += " (here: https:// instead of http://)"
    return RedirectError(message, location=shown, provider=provider, status_code=status,
                         upstream=upstream_detail(status, {}, message, headers, secrets))


def error_from_transport(provider: str, exc: httpx.HTTPError, secrets: Iterable[str | None] = (),
                         url: str | None = None) -> LLMError:
    """The typed error for a failure below HTTP: timeouts, refused or dropped connections.

    ``url`` is the request's: its origin (scheme, host and port; never a path, query or
    user part, which may hold a key) says which server could not be reached.
    """
    detail = scrub(str(exc) or type(exc).__name__, secrets)
    api = f"the API at {where}" if (where := origin_of(url)) else "the API"
    if isinstance(exc, httpx.TimeoutException):
        return LLMTimeoutError(f"{api} did not answer in time ({type(exc).__name__}: {detail})", provider=provider)
    if isinstance(exc, httpx.RemoteProtocolError):
        return ProviderUnavailableError(f"the connection closed early ({detail})", provider=provider)
    if isinstance(exc, httpx.TransportError):
        return ProviderUnavailableError(f"could not reach {api} ({type(exc).__name__}: {detail})", provider=provider)
    return LLMError(f"{type(exc).__name__}: {detail}", provider=provider)


def origin_of(url: str | None) -> str | None:
    """``scheme://host:port`` of ``url``, or None when it has none to show."""
    if not url:
        return None
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return None
    if not parsed.scheme or not parsed.host:
        return None
    port = f":{parsed.port}" if parsed.port is not None else ""
    return f"{parsed.scheme}://{parsed.host}{port}"
