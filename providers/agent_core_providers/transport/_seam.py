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

#: httpcore's errors and the httpx error each becomes, most specific first (as httpx's transport maps them)
_ERRORS: tuple[tuple[type[Exception], type[Exception]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


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
        self._pool = FlatPool(network_backend=watch_sync_backend(httpcore.SyncBackend()),
                              max_keepalive=max_keepalive, keepalive_expiry=keepalive_expiry,
                              ssl_context=httpx.create_ssl_context(verify=verify, trust_env=trust_env))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            answer = self._pool.handle_request(_Outgoing(request))
        except Exception as exc:
            raise as_httpx(exc) from exc
        return httpx.Response(answer.status, headers=answer.headers, stream=_SyncBody(answer.stream),
                              extensions={**answer.extensions, BODY: answer.stream})

    @property
    def pool(self) -> FlatPool:
        """Its connection pool (for tests and benchmarks: how many connections it holds)."""
        return self._pool

    def close(self) -> None:
        self._pool.close()


class AsyncLeanTransport(httpx.AsyncBaseTransport):
    """The async twin of :class:`LeanTransport`, on the running loop's own transports (:mod:`.aio_stream`)."""

    def __init__(self, *, verify: Any = True, trust_env: bool = True, max_keepalive: int = 128,
                 keepalive_expiry: float = 5.0) -> None:
        self._pool = FlatAsyncPool(network_backend=watch_async_backend(AsyncioBackend()),
                                   max_keepalive=max_keepalive, keepalive_expiry=keepalive_expiry,
                                   ssl_context=httpx.create_ssl_context(verify=verify, trust_env=trust_env))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            answer = await self._pool.handle_async_request(_Outgoing(request))
        except Exception as exc:
            raise as_httpx(exc) from exc
        return httpx.Response(answer.status, headers=answer.headers, stream=_AsyncBody(answer.stream),
                              extensions={**answer.extensions, BODY: answer.stream})

    @property
    def pool(self) -> FlatAsyncPool:
        """Its connection pool (see :attr:`LeanTransport.pool`)."""
        return self._pool

    async def aclose(self) -> None:
        await self._pool.aclose()
