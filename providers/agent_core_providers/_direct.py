"""A pooled client's response body read straight from its connection, past httpx's reading layers.

A response that came through agent-core's transport (:mod:`.transport`) carries
the connection's own body in its :data:`~.transport.BODY` extension (a public
``httpx.Response.extensions`` entry). Reading that instead of ``iter_raw`` skips
the generator layers httpx puts around every network read of a body (four per
read), which was most of what a streamed chunk cost below the provider. The
body is the same one the response's stream reads, and it ends (and hands its
connection back) the same way; its errors are httpcore's, which the caller turns
into httpx's with :func:`as_httpx`.
"""

from __future__ import annotations

from typing import Any

import httpx

from .transport import BODY, TRANSPORT_ERRORS, as_httpx

__all__ = ["TRANSPORT_ERRORS", "as_httpx", "direct_chunks", "plain_body"]


def direct_chunks(response: httpx.Response, asynchronous: bool) -> Any:
    """The body's chunks read straight from the connection, or None when ``response`` did not come by our transport.

    Only for a body sent as it is (the caller checks ``Content-Encoding``).
    """
    body = response.extensions.get(BODY)
    if body is None:
        return None
    return body.__aiter__() if asynchronous else iter(body)


def plain_body(response: httpx.Response) -> Any:
    """The body straight from the connection when it is sent as it is (no ``Content-Encoding``), else None.

    Iterate it (``for``, or ``async for`` on an async client's) for its chunks; it raises
    httpcore's errors, which the caller maps with :func:`as_httpx`.
    """
    if ", ".join(response.headers.get_list("content-encoding")):
        return None
    return response.extensions.get(BODY)
