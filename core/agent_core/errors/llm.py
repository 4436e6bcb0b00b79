"""The provider failed: :class:`LLMError` and its kinds (re-exported by :mod:`agent_core.errors`)."""

from __future__ import annotations

from .root import AgentCoreError

__all__ = [
    "AuthenticationError",
    "ContentFilterError",
    "ContextLengthError",
    "EmptyResponseError",
    "InvalidRequestError",
    "LLMError",
    "LLMTimeoutError",
    "MalformedResponseError",
    "ProviderUnavailableError",
    "RateLimitError",
]


class LLMError(AgentCoreError):
    """The model provider failed to produce a response.

    Attributes:
        message: the provider's own explanation, kept verbatim.
        provider: name of the provider plugin, when known.
        status_code: HTTP status, when the failure came from a response.
        retryable: whether repeating the same request may succeed.
    """

    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status_code: int | None = None,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status_code = status_code
        if retryable is not None:
            self.retryable = retryable

    def __str__(self) -> str:
        where = f"[{self.provider}] " if self.provider else ""
        status = f" (HTTP {self.status_code})" if self.status_code else ""
        return f"{where}{self.message}{status}"


class RateLimitError(LLMError):
    """The provider is throttling us; wait ``retry_after`` seconds when given."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: object) -> None:
        super().__init__(message, **kwargs)  # type: ignore[arg-type]
        self.retry_after = retry_after

    def __str__(self) -> str:
        base = super().__str__()
        return f"{base}; retry after {self.retry_after:g}s" if self.retry_after is not None else base


class AuthenticationError(LLMError):
    """The API key is missing, invalid, or lacks permission: fix the credentials."""


class ContextLengthError(LLMError):
    """The request exceeds the model's context window: shorten or compact the history."""


class ContentFilterError(LLMError):
    """The provider refused the input or output under its content policy."""


class InvalidRequestError(LLMError):
    """The provider rejected the request as malformed (bad model name, bad parameter...)."""


class ProviderUnavailableError(LLMError):
    """The provider is down, overloaded or unreachable; retrying later may work."""

    retryable = True


class LLMTimeoutError(LLMError):
    """The provider did not respond within the configured timeout."""

    retryable = True


class MalformedResponseError(LLMError):
    """The server's answer is not what its API promises.

    A body that is not SSE, not JSON or not UTF-8, an SSE line over the size
    cap, or well-formed JSON in a shape the API never uses (token counts
    given as strings, ``"index": null``, ``choices: ["x"]``, a delta that is
    a string). The fault is the server's (or a proxy's), not a plugin's, so
    it is reported as an ``LLMError`` naming the provider and quoting the
    offending line (secrets scrubbed, length bounded); ``status_code`` is the
    status the body came with (often 200). Not retried: the same server
    usually sends the same bytes again.
    """


class EmptyResponseError(LLMError):
    """A streamed call ended without one chunk and without an answer.

    The engine never answers an empty stream with a second (billable) call;
    it reports this instead. Repeating the request may work.
    """

    retryable = True
