"""HTTP statuses and JSON bodies for the library's typed errors.

Every failure leaves the server with a 4xx/5xx status that says whose fault it was: the caller's (400, 401, 404, 409),
the upstream model API's (429, 502, 503, 504), or a plugin's (500). Never a
traceback: the message is the typed error's own text, which names the
problem and never holds a secret (the errors are built that way).
"""

from __future__ import annotations

from typing import Any

from ...errors import (
    ActionInputError,
    ConfigError,
    ConfigNotAllowedError,
    ConflictError,
    ContentFilterError,
    ContextLengthError,
    InvalidArgumentError,
    InvalidRequestError,
    InvalidValueError,
    LLMError,
    LLMTimeoutError,
    MissingAPIKeyError,
    PluginError,
    ProviderRequestCancelled,
    ProviderUnavailableError,
    RateLimitError,
    RequestInFlightError,
    SessionNotFoundError,
    StoreError,
    StoreUnavailableError,
)

__all__ = ["ApiError", "error_body", "status_for", "status_for_class", "status_for_name"]


class ApiError(Exception):
    """A request the server refuses: ``status``, a short ``type`` and a message naming the problem."""

    def __init__(self, status: int, type: str, message: str, headers: dict[str, str] | None = None, *,
                 param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.message = message
        self.headers = headers or {}
        self.param = param


def status_for_name(type_name: str) -> int:
    """The status of an error known only by its class name (an ``error`` event's ``ErrorInfo.type``)."""
    from ... import errors

    cls = getattr(errors, type_name, None)
    return status_for_class(cls) if isinstance(cls, type) and issubclass(cls, BaseException) else 500


def status_for(exc: BaseException) -> int:
    return status_for_class(type(exc))


def status_for_class(cls: type[BaseException]) -> int:
    """Whose fault: 4xx the caller's, 429/502/503/504 the upstream API's, 500 a plugin's or ours."""
    for types, status in _STATUSES:
        if issubclass(cls, types):
            return status
    return 500


# First match wins. Upstream errors the client can fix by changing its request stay 400, as the API said.
_STATUSES: tuple[tuple[Any, int], ...] = (
    (RateLimitError, 429),
    (LLMTimeoutError, 504),
    (ProviderUnavailableError, 503),
    ((InvalidRequestError, ContextLengthError, ContentFilterError), 400),
    (LLMError, 502),
    (ProviderRequestCancelled, 499),
    (SessionNotFoundError, 404),
    (ConfigNotAllowedError, 403),
    (MissingAPIKeyError, 500),  # behind a server, the key is the operator's to set, not the client's
    ((ConflictError, RequestInFlightError), 409),
    ((ConfigError, InvalidArgumentError, InvalidValueError, ActionInputError), 400),
    (StoreUnavailableError, 503),
    ((PluginError, StoreError), 500),
)


def error_body(type: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"type": type, "message": message, **extra}}
