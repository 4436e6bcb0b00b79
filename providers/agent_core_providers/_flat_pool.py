"""An async connection pool whose cost per request does not grow with the streams it holds.

Theory of operation
-------------------
httpcore's ``AsyncConnectionPool`` keeps one list of requests and one of
connections, and on every request it adds or removes it walks both to assign
requests to connections again (encode/httpcore #1035). A server relaying
hundreds of long streams at once pays that walk many times per request: it was
a third of ``agent-core serve``'s CPU at 200 paced streams.

This pool keeps what a relay needs and nothing it must walk: per origin, a
stack of idle HTTP/1.1 connections. A request takes the most recently used idle
one (checking only that one is still usable: ``has_expired`` also notices a
socket the server closed) or opens a new connection; when the response is
closed the connection goes back on its stack if it can carry another request.
Nothing waits for a connection, because the pooled clients set no cap on open
connections (the caller's concurrency is the cap); the idle ones are capped at
``max_keepalive`` and the oldest idle one is checked for expiry each time one
is returned, so a stack does not keep dead sockets for long.

It is a drop-in for the ``_pool`` of an ``httpx.AsyncHTTPTransport``: same
``handle_async_request`` / ``aclose`` contract, same network backend (so the
watched streams of :mod:`._pool` still see every write), and httpcore's errors,
so httpx still maps them to its own. Its connections are :mod:`._lean_conn`'s
(HTTP/1.1 with a lean body reader); a transport set up for HTTP/2 or connect
retries keeps httpcore's connections, which do those.

:class:`FlatPool` is the same pool for the sync clients, whose requests come
from many threads: the stacks are changed under a lock, and connections are
closed outside it.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import Any, Self

import anyio
import httpcore

from ._lean_conn import AsyncLeanConnection, LeanConnection

__all__ = ["FlatAsyncPool", "FlatPool"]


class _Stacks:
    """What both pools keep, with the stack work that does no I/O: take an idle connection, put one back."""

    def __init__(self, *, network_backend: Any, max_keepalive: int, keepalive_expiry: float | None,
                 ssl_context: Any = None, http1: bool = True, http2: bool = False, retries: int = 0,
                 local_address: str | None = None, uds: str | None = None, socket_options: Any = None) -> None:
        self._network_backend = network_backend  # read (and wrapped) by ._pool._watch
        self._max_keepalive = max_keepalive
        self._options = {"ssl_context": ssl_context, "keepalive_expiry": keepalive_expiry, "http1": http1,
                         "http2": http2, "retries": retries, "local_address": local_address, "uds": uds,
                         "socket_options": socket_options}
        self._idle: dict[tuple[bytes, bytes, int], deque[Any]] = {}  # by origin
        self._idle_count = 0
        self._busy: set[Any] = set()  # so a close can close them too

    @classmethod
    def replacing(cls, pool: Any, max_keepalive: int, network_backend: Any = None) -> Self:
        """A flat pool with the options of httpcore's ``pool`` (as httpx's transport built it).

        ``network_backend``: the one its connections use (default: ``pool``'s).
        """
        return cls(network_backend=network_backend or pool._network_backend, max_keepalive=max_keepalive,
                   keepalive_expiry=pool._keepalive_expiry, ssl_context=pool._ssl_context, http1=pool._http1,
                   http2=pool._http2, retries=pool._retries, local_address=pool._local_address, uds=pool._uds,
                   socket_options=pool._socket_options)

    @property
    def lean(self) -> bool:
        """Its connections are :mod:`._lean_conn`'s (HTTP/1.1 without connect retries), as :mod:`._direct` needs."""
        o = self._options
        return bool(o["http1"]) and not o["http2"] and not o["retries"]

    @property
    def connections(self) -> int:
        """Open connections, idle and busy (for tests and benchmarks)."""
        return self._idle_count + len(self._busy)

    def _take(self, origin: httpcore.Origin, lean: type, general: type) -> tuple[Any, list[Any]]:
        """An idle connection to ``origin`` (or a new one, now busy), and the dead ones met on the way, to close."""
        dead = []
        stack = self._idle.get(_key(origin))
        conn = None
        while stack:
            candidate = stack.pop()
            self._idle_count -= 1
            if candidate.is_available() and not candidate.has_expired():
                conn = candidate
                break
            dead.append(candidate)
        if conn is None:
            conn = _open(origin, self._network_backend, self._options, lean, general)
        self._busy.add(conn)
        return conn, dead

    def _put_back(self, conn: Any, origin: httpcore.Origin) -> list[Any]:
        """``conn`` back on its origin's stack if it can carry another request; the ones to close."""
        self._busy.discard(conn)
        dead = []
        if conn.is_idle() and not conn.is_closed() and self._idle_count < self._max_keepalive:
            stack = self._idle.setdefault(_key(origin), deque())
            stack.append(conn)
            self._idle_count += 1
            if len(stack) > 1 and stack[0].has_expired():  # the oldest idle one: O(1) upkeep per return
                dead.append(stack.popleft())
                self._idle_count -= 1
        elif not conn.is_closed():
            dead.append(conn)
        return dead

    def _drop_all(self) -> list[Any]:
        conns = [c for stack in self._idle.values() for c in stack] + list(self._busy)
        self._idle.clear()
        self._busy.clear()
        self._idle_count = 0
        return conns


class FlatAsyncPool(_Stacks):
    """Idle connections per origin, most recent first; a new connection when none is idle."""

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        _check_scheme(request)
        origin = request.url.origin
        conn, dead = self._take(origin, AsyncLeanConnection, httpcore.AsyncHTTPConnection)
        await _close_all(dead)
        try:
            response = await conn.handle_async_request(request)
        except BaseException:
            await self._give_back(conn, origin)
            raise
        # the connection's response is made for this request alone: its body is wrapped in place
        # (a new httpcore.Response would check every header again)
        response.stream = _ReturningStream(response.stream, self, conn, origin)
        return response

    async def _give_back(self, conn: Any, origin: httpcore.Origin) -> None:
        """Back on its origin's stack if it can carry another request; else closed."""
        await _close_all(self._put_back(conn, origin))

    async def aclose(self) -> None:
        await _close_all(self._drop_all())

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _check_scheme(request: httpcore.Request) -> None:
    scheme = request.url.scheme
    if scheme not in (b"http", b"https"):
        said = "is missing an 'http://' or 'https://' protocol" if not scheme else \
            f"has an unsupported protocol '{scheme.decode(errors='replace')}://'"
        raise httpcore.UnsupportedProtocol(f"Request URL {said}.")


def _open(origin: httpcore.Origin, backend: Any, options: dict[str, Any], lean: type, general: type) -> Any:
    """A new connection to ``origin``: a lean HTTP/1.1 one unless the options ask for what only httpcore's do."""
    if options["http2"] or not options["http1"] or options["retries"]:
        return general(origin=origin, network_backend=backend, **options)
    return lean(origin, network_backend=backend, ssl_context=options["ssl_context"],
                keepalive_expiry=options["keepalive_expiry"], local_address=options["local_address"],
                uds=options["uds"], socket_options=options["socket_options"])


def _key(origin: httpcore.Origin) -> tuple[bytes, bytes, int]:
    return origin.scheme, origin.host, origin.port  # an Origin compares equal but is not hashable


async def _close_all(conns: list[Any]) -> None:
    if not conns:
        return
    with anyio.CancelScope(shield=True):  # a cancelled request still closes what it held
        for conn in conns:
            await conn.aclose()


class _ReturningStream:
    """The response body; closing it hands the connection back to the pool."""

    def __init__(self, stream: Any, pool: FlatAsyncPool, conn: httpcore.AsyncHTTPConnection,
                 origin: httpcore.Origin) -> None:
        self._stream = self.body = stream  # ``body``: read directly by :mod:`._direct`
        self._origin = origin
        self._pool = pool
        self._conn = conn
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for part in self._stream:
                yield part
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        settled = getattr(self._stream, "settled", None)
        if settled is not None and settled():  # the usual end: nothing to close, nothing a cancel could cut short
            await self._pool._give_back(self._conn, self._origin)  # closes (shielded) only what expired
            return
        with anyio.CancelScope(shield=True):
            if hasattr(self._stream, "aclose"):
                await self._stream.aclose()
            await self._pool._give_back(self._conn, self._origin)


class FlatPool(_Stacks):
    """The sync twin of :class:`FlatAsyncPool`, shared by threads (see the module's docstring)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._lock = threading.Lock()

    def handle_request(self, request: httpcore.Request) -> httpcore.Response:
        _check_scheme(request)
        origin = request.url.origin
        with self._lock:
            conn, dead = self._take(origin, LeanConnection, httpcore.HTTPConnection)
        for old in dead:
            old.close()
        try:
            response = conn.handle_request(request)
        except BaseException:
            self._give_back(conn, origin)
            raise
        response.stream = _Returning(response.stream, self, conn, origin)  # in place, as the async pool does
        return response

    def _give_back(self, conn: Any, origin: httpcore.Origin) -> None:
        with self._lock:
            dead = self._put_back(conn, origin)
        for old in dead:
            old.close()

    def close(self) -> None:
        with self._lock:
            conns = self._drop_all()
        for conn in conns:
            conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Returning:
    """The sync twin of :class:`_ReturningStream`."""

    def __init__(self, stream: Any, pool: FlatPool, conn: Any, origin: httpcore.Origin) -> None:
        self._stream, self._pool, self._conn, self._origin = stream, pool, conn, origin
        self.body = stream  # read directly by :mod:`._direct`
        self._closed = False

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._stream
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if hasattr(self._stream, "close"):
                self._stream.close()
        finally:
            self._pool._give_back(self._conn, self._origin)
