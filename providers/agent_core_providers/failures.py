"""A provider's HTTP failures as typed errors: what the bundled providers do, for yours too.

A third-party provider that talks to an HTTP API with httpx reports what the API said
the way the bundled ones do, so that retries, the CLI and ``agent-core serve`` treat its
failures alike: the typed :mod:`agent_core.errors` class for the status and the error
object (``RateLimitError`` with ``retry_after`` from ``retry-after``, ``AuthenticationError``,
``ProviderUnavailableError``...), and ``upstream``, the API's own account of it
(:class:`~agent_core.errors.UpstreamDetail`: status, type, code, param, message and the
rate-limit headers). ``serve`` answers a client with that account: an upstream 500 is
passed on as a 500, not turned into our own 503.

* :func:`raise_for` / :func:`error_for`: an httpx response with an error status;
* :func:`translated`: httpx's own failures below HTTP (a refused connection, a timeout,
  a stream cut short) as typed errors, around the code that sends and reads;
* :func:`retry_delay`: how long to wait before trying again, or ``None`` to give up.
  The engine never repeats a provider call on its own (a call may already have cost
  tokens); retrying is the provider's job, with this policy, as the bundled ones do.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

import httpx
from agent_core.errors import LLMError

from ._errors import error_from_response, error_from_transport
from ._retry import retry_delay

__all__ = ["error_for", "raise_for", "retry_delay", "translated"]


def error_for(response: httpx.Response, provider: str, secrets: Iterable[str | None] = ()) -> LLMError:
    """The typed error for ``response`` (status 400 or more), with the API's own account as ``upstream``.

    A streamed response's body is read first. ``secrets`` (the API key) are scrubbed from every text.
    """
    body = response.read()
    return error_from_response(provider, response.status_code, response.headers, body, secrets,
                               url=str(response.request.url), method=response.request.method)


def raise_for(response: httpx.Response, provider: str, secrets: Iterable[str | None] = ()) -> None:
    """Raise :func:`error_for` when ``response`` has an error status; nothing otherwise."""
    if response.status_code >= 400:
        raise error_for(response, provider, secrets)


@contextlib.contextmanager
def translated(provider: str, secrets: Iterable[str | None] = ()) -> Iterator[None]:
    """httpx's failures below HTTP raised inside the block as typed errors (a cut stream: ``ProviderUnavailableError``)."""
    try:
        yield
    except httpx.HTTPError as exc:
        url = str(exc.request.url) if _has_request(exc) else None
        raise error_from_transport(provider, exc, secrets, url=url) from exc


def _has_request(exc: httpx.HTTPError) -> bool:
    try:
        exc.request  # noqa: B018 - httpx raises RuntimeError when the error carries no request
    except RuntimeError:
        return False
    return True
