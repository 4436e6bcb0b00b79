"""The provider failed: :class:`LLMError` and its kinds (re-exported by :mod:`agent_core.errors`).

An error built from an API's answer also carries that answer's own account of
it, :class:`UpstreamDetail`: a gateway in front of other clients must pass on
the upstream's status, ``type``, ``code``, ``param``, message and rate-limit
headers as they were, not our rewording of them, or the clients misread quota
for throttling and retry what never succeeds.
"""

from __future__ import annotations

from typing import Any

import msgspec

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
    "QuotaExceededError",
    "RateLimitError",
    "RedirectError",
    "UpstreamDetail",
]


class UpstreamDetail(msgspec.Struct, frozen=True, kw_only=True):
    """What the model API itself said about a failure, kept for whoever must repeat it.

    Attributes:
        status: the HTTP status of the error response; ``None`` for an error
            that came inside a 200 answer (a stream's error event).
        type: the error object's ``type`` (``insufficient_quota``,
            ``overloaded_error``...), when it gave a string.
        code: its ``code`` (an integer code becomes its digits; Anthropic's
            ``details.error_code`` when there is no code).
        param: its ``param``: the request field at fault (``messages``).
        message: the API's own message, unprefixed, with secrets scrubbed; for
            a body without one, its text (cut short) or a note that it was empty.
        headers: the response headers a gateway should pass on (rate limits,
            ``retry-after``, the upstream request id), names lowercased, values
            scrubbed and bounded. A fresh dict per error: read it, do not change it.
    """

    status: int | None = None
    type: str | None = None
    code: str | None = None
    param: str | None = None
    message: str
    headers: dict[str, str] = {}


class LLMError(AgentCoreError):
    """The model provider failed to produce a response.

    Attributes:
        message: the provider's own explanation, kept verbatim.
        provider: name of the provider plugin, when known.
        status_code: HTTP status, when the failure came from a response.
        retryable: whether repeating the same request may succeed.
        upstream: the API's own account of the failure, when an API answered.
    """

    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status_code: int | None = None,
        retryable: bool | None = None,
        upstream: UpstreamDetail | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status_code = status_code
        self.upstream = upstream
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


class QuotaExceededError(RateLimitError):
    """The account has no quota or credit left (OpenAI's ``insufficient_quota``, a spend limit).

    A 429 like throttling, but waiting does not help, so it is never retried.
    """

    retryable = False


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


class RedirectError(LLMError):
    """The API answered with a redirect (3xx), which is never followed.

    A request carries the key; following a redirect would hand it to wherever
    the answer points, which the configuration never named. The usual cause is
    a ``base_url`` that moved, most often ``http://`` where the API answers on
    ``https://``: the fix is the ``base_url``, so the error names the status
    and the ``Location`` (scrubbed of the call's secrets). Not retried.

    Attributes:
        location: the answer's ``Location`` header, or ``None`` when it had none.
    """

    def __init__(self, message: str, *, location: str | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.location = location


class EmptyResponseError(LLMError):
    """A streamed call ended without one chunk and without an answer.

    The engine never answers an empty stream with a second (billable) call;
    it reports this instead. Repeating the request may work.
    """

    retryable = True
