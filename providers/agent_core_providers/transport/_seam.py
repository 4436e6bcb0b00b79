"""agent-core's HTTP/1.1 transport as httpx sees it: a ``BaseTransport`` and an ``AsyncBaseTransport``.

httpx hands a transport an ``httpx.Request`` and takes back an ``httpx.Response``
whose stream it reads and closes; that is the whole seam, and this module is
the only way in. The request goes to a flat pool (:mod:`.flat_pool`) of lean
connections (:mod:`.lean_conn`) as a :class:`_Outgoing` (the attribute names a
connection reads), and the pool's answer comes back as an ``httpx.Response``
whose stream is the connection's own body; httpcore's errors become httpx's
(:func:`as_httpx`), as httpx's own transport maps them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpcore
import httpx

from .aio_stream import AsyncioBackend
from .flat_pool import FlatAsyncPool, FlatPool
from .watched import watch_async_backend, watch_sync_backend

__all__ = ["BODY", "TRANSPORT_ERRORS", "AsyncLeanTransport", "LeanTransport", "as_httpx"]

#: the response extension that holds the connection's own body iterable (httpcore's errors): a
#: reader that can turn those into httpx's (:func:`as_httpx`) reads it without httpx's layers per
#: read; the response's own stream reads the same body, so either way is whole
BODY = "agent_core.body"

#: httpcore's errors that httpx maps, most specific first: each becomes httpx's error of the same name
#: (as httpx's own transport maps them)
_MAPPED = ("ConnectTimeout", "ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutException", "ConnectError",
           "ReadError", "WriteError", "NetworkError", "UnsupportedProtocol", "LocalProtocolError",
           "RemoteProtocolError", "ProtocolError")
_ERRORS: tuple[tuple[type[Exception], type[Exception]], ...] = tuple(
    (getattr(httpcore, name), getattr(httpx, name)) for name in _MAPPED)


#: httpcore's errors (what a read of :data:`BODY` may raise)
TRANSPORT_ERRORS = tuple(theirs for theirs, _ in _ERRORS)


def as_httpx(exc: Exception) -> Exception:
    """The httpx error for httpcore's ``exc`` (``exc`` itself when it is not httpcore's)."""
    for theirs, ours in _ERRORS:
        if isinstance(exc, theirs):
            return ours(str(exc))
    return exc


class _Outgoing:
    """What a lean connection reads of a request (httpcore's attribute names), made from httpx's."""

    __slots__ = ("extensions", "headers", "method", "stream", "url")

    def __init__(self, request: httpx.Request) -> None:
        u = request.url
        self.method = request.method.encode("ascii")
        self.url = httpcore.URL(scheme=u.raw_scheme, host=u.raw_host, port=u.port, target=u.raw_path)
        self.headers = request.headers.raw
        self.stream = request.stream
        self.extensions = request.extensions


def _pool_settings(verify: Any, trust_env: bool, max_keepalive: int, keepalive_expiry: float) -> dict[str, Any]:
    """What either pool is made with: its keep-alive limits and httpx's own TLS context."""
    return {"max_keepalive": max_keepalive, "keepalive_expiry": keepalive_expiry,
            "ssl_context": httpx.create_ssl_context(verify=verify, trust_env=trust_env)}


def _response(answer: Any, stream: httpx.SyncByteStream | httpx.AsyncByteStream) -> httpx.Response:
    """httpx's response for the pool's ``answer``, read through ``stream``; the bare body rides along as :data:`BODY`."""
    return httpx.Response(answer.status, headers=answer.headers, stream=stream,
                          extensions={**answer.extensions, BODY: answer.stream})


class _SyncBody(httpx.SyncByteStream):
    def __init__(self, body: Any) -> None:
        self._body = body

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._body
        except Exception as exc:
            raise as_httpx(exc) from exc

    def close(self) -> None:
        self._body.close()


class _AsyncBody(httpx.AsyncByteStream):
    def __init__(self, body: Any) -> None:
        self._body = body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for part in self._body:
                yield part
        except Exception as exc:
            raise as_httpx(exc) from exc

    async def aclose(self) -> None:
        await self._body.aclose()


class LeanTransport(httpx.BaseTransport):
    """HTTP/1.1 to any origin through a :class:`.flat_pool.FlatPool` (``verify`` and ``trust_env`` as httpx's)."""

    def __init__(self, *, verify: Any = True, trust_env: bool = True, max_keepalive: int = 128,
                 keepalive_expiry: float = 5.0) -> None:
        #: its connection pool (tests and benchmarks read how many connections it holds)
        self.pool = FlatPool(network_backend=watch_sync_backend(httpcore.SyncBackend()),
                             **_pool_settings(verify, trust_env, max_keepalive, keepalive_expiry))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            answer = self.pool.handle_request(_Outgoing(request))
        except Exception as exc:
            raise as_httpx(exc) from exc
        return _response(answer, _SyncBody(answer.stream))

    def close(self) -> None:
        self.pool.close()


class AsyncLeanTransport(httpx.AsyncBaseTransport):
    """The async twin of :class:`LeanTransport`, on the running loop's own transports (:mod:`.aio_stream`)."""

    def __init__(self, *, verify: Any = True, trust_env: bool = True, max_keepalive: int = 128,
                 keepalive_expiry: float = 5.0) -> None:
        #: its connection pool (see :class:`LeanTransport`)
        self.pool = FlatAsyncPool(network_backend=watch_async_backend(AsyncioBackend()),
                                  **_pool_settings(verify, trust_env, max_keepalive, keepalive_expiry))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            answer = await self.pool.handle_async_request(_Outgoing(request))
        except Exception as exc:
            raise as_httpx(exc) from exc
        return _response(answer, _AsyncBody(answer.stream))

    async def aclose(self) -> None:
        await self.pool.aclose()
