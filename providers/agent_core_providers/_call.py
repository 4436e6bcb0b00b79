"""What one API request is: :class:`HTTPCall`, the value every transport step reads.

A call is built fresh for each request by the provider (``_base.py``) and
never changes: the attempts, the retry rule and the error mapping only read
it. It carries the credentials (in ``headers``, added at send time) and the
strings to scrub from every error (``secrets``), so its ``repr`` leaves both
out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

__all__ = ["MAX_RETRY_SLEEP", "HTTPCall", "build_request"]

#: Default longest wait before a retry (``max_retry_wait_s``); a longer ``retry-after`` fails fast.
MAX_RETRY_SLEEP = 60.0


@dataclass(frozen=True, slots=True)
class HTTPCall:
    """Everything needed to send one API request (built fresh for each call).

    ``secrets`` are scrubbed from every error text; ``repr`` leaves out the
    headers and the secrets, so a logged call never shows a key.
    ``max_retry_wait`` caps a ``retry-after`` worth waiting for; ``deadline``
    (seconds, ``None`` for none) bounds the whole call, retries included.
    ``rate_limit_retries`` bounds the retries after a 429 (``None``: only
    ``max_retries`` does), for a gateway whose own clients retry too.
    ``chunk_timeout`` bounds each silence of a streamed body once its headers
    are in (``None``: only the client's read timeout does).
    """

    provider: str
    url: str
    body: bytes
    headers: Mapping[str, str] = field(repr=False)
    max_retries: int = 2
    secrets: tuple[str, ...] = field(default=(), repr=False)
    method: str = "POST"
    max_retry_wait: float = MAX_RETRY_SLEEP
    deadline: float | None = None
    rate_limit_retries: int | None = None
    chunk_timeout: float | None = None


#: parsed URLs by their text: a provider sends to a handful of URLs, and httpx parses a URL
#: given as text twice per request (about a tenth of what building the request costs)
_URLS: dict[str, httpx.URL] = {}


def build_request(client: httpx.Client | httpx.AsyncClient, call: HTTPCall, trace: Any = None) -> httpx.Request:
    """The httpx request for ``call`` (built again for each attempt: a request is sent once).

    ``trace``: httpcore's ``trace`` request extension to send it with (a callable; None for none).
    """
    url = _URLS.get(call.url)
    if url is None:
        url = httpx.URL(call.url)  # httpx.URL is immutable: one parsed value serves every request
        if len(_URLS) >= 256:  # a bound, for a server whose tenants each name their own base URL
            _URLS.clear()
        _URLS[call.url] = url
    extensions = {"trace": trace} if trace is not None else None
    return client.build_request(call.method, url, headers=call.headers, content=call.body, extensions=extensions)
