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

__all__ = ["BODY_TOO_LONG", "TRANSPORT_ERRORS", "aread_direct", "as_httpx", "direct_chunks", "read_direct"]


def direct_chunks(response: httpx.Response, asynchronous: bool) -> Any:
    """The body's chunks read straight from the connection, or None when ``response`` did not come by our transport.

    Only for a body sent as it is (the caller checks ``Content-Encoding``).
    """
    body = response.extensions.get(BODY)
    if body is None:
        return None
    return body.__aiter__() if asynchronous else iter(body)


#: what :func:`read_direct` answers for a body longer than its ``limit`` (the caller raises its own error)
BODY_TOO_LONG = b"<too long>"


def _plain(response: httpx.Response) -> Any:
    if ", ".join(response.headers.get_list("content-encoding")):
        return None
    return response.extensions.get(BODY)


def read_direct(response: httpx.Response, limit: int) -> bytes | None:
    """The whole body of a response from our transport (None otherwise), without httpx's reading layers.

    A body past ``limit`` bytes is :data:`BODY_TOO_LONG`, found as it is read, never joined.
    """
    body = _plain(response)
    if body is None:
        return None
    parts, size = [], 0
    try:
        for part in body:
            size += len(part)
            if size > limit:
                return BODY_TOO_LONG
            parts.append(part)
    except TRANSPORT_ERRORS as exc:
        raise as_httpx(exc) from exc
    return b"".join(parts)


async def aread_direct(response: httpx.Response, limit: int) -> bytes | None:
    """The async twin of :func:`read_direct`."""
    body = _plain(response)
    if body is None:
        return None
    parts, size = [], 0
    try:
        async for part in body:
            size += len(part)
            if size > limit:
                return BODY_TOO_LONG
            parts.append(part)
    except TRANSPORT_ERRORS as exc:
        raise as_httpx(exc) from exc
    return b"".join(parts)
