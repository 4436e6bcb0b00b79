"""The pooled httpx clients of the bundled providers, and the sockets a cancel can reach.

Theory of operation
-------------------
Provider instances live for one request, so connections are pooled here, per
``(base_url, timeout)``, in module-level clients: one sync client per key,
and async ones per event loop (an ``AsyncClient``'s connections belong to the
loop that opened them).

Watched streams: the pooled clients' transports open their connections
through :class:`_WatchingBackend`, which wraps each network stream. While an
exchange (:mod:`._exchange`) sends a request it sets :data:`_current` to the
call's in-flight record (:func:`bound`); the first write of the request on a
stream hands the stream to that record (``record.watch(stream)``). From then
on a cancel (or the ``deadline_s`` timer) can shut the socket down even
before the response headers arrived, which is where a slow model keeps a
client waiting longest, and the record knows whether the connection was
*reused* from the pool and whether *any byte* of the answer came back: a
reused connection that fails before its first byte is a stale keep-alive
connection the server had already closed, and is retried at once.

The hook is httpcore's public ``network_backend`` seam, set on the pool of
an ``httpx.HTTPTransport``. Clients injected by the user
(``Provider.using(client=...)``) are not wrapped: a cancel still closes
their response once its headers are in.

Event loops: an ``asyncio.run`` per request must not leave one client and
its sockets behind per loop. With each loop's clients an async generator is
started whose ``finally`` closes them; asyncio finalises every live async
generator when the loop shuts down (``asyncio.run`` does so), so the clients
are closed inside their own loop, before it closes.

Pool size: httpx keeps at most 20 idle connections by default, so 50 threads
sharing a client opened a new connection for most requests. The pooled
clients keep up to :data:`KEEPALIVE_CONNECTIONS` and put no cap on open ones
(the caller's concurrency is the cap). The async clients' transports hold a
:class:`._flat_pool.FlatAsyncPool` instead of httpcore's pool, whose cost per
request grows with the connections it holds.

Cookies: the pooled clients keep none (:class:`_NoCookies`). They are shared by
every caller of a base URL, every tenant of a server, and a kept cookie would
be sent on the next caller's request.
"""

from __future__ import annotations

import asyncio
import atexit
import http.cookiejar
import math
import socket
import ssl
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

import httpcore
import httpx

from ._aio_stream import AsyncioBackend
from ._direct import Route
from ._flat_pool import FlatAsyncPool, FlatPool

__all__ = [
    "KEEPALIVE_CONNECTIONS",
    "ROUTE",
    "aclose_clients",
    "async_client_for",
    "bound",
    "client_timeout",
    "close_clients",
    "sync_client_for",
]

#: The attribute of a pooled client that holds its :class:`._direct.Route` to its pool.
ROUTE = "_agent_core_route"

#: Idle connections each pooled client keeps open for reuse (httpx's default is 20).
KEEPALIVE_CONNECTIONS = 128
_LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=KEEPALIVE_CONNECTIONS)


class Watcher(Protocol):
    """What a watched stream reports to (the in-flight record, :mod:`._inflight`)."""

    stream: Any
    received: bool

    def watch(self, stream: Any) -> None: ...


#: The in-flight record of the request being sent in this thread / task, if any.
_current: ContextVar[Watcher | None] = ContextVar("agent_core_providers_inflight", default=None)


@contextmanager
def bound(record: Watcher) -> Iterator[None]:
    """Hand streams written to inside this block to ``record`` (around the send only)."""
    token = _current.set(record)
    try:
        yield
    finally:
        _current.reset(token)


# -- watched network streams ---------------------------------------------------------------


class _WatchedStream(httpcore.NetworkStream):
    """A sync network stream that reports to the in-flight record of the request using it."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner
        self._sock = _readable_socket(inner)
        self._record: Watcher | None = None
        self.requests = 0  # requests started on this connection (> 0 before a write: reused)
        self.read_cap: float | None = None  # shorter read timeout while draining a finished body

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        record = _current.get()
        if record is not None and record.stream is not self:
            record.watch(self)  # raises httpcore.WriteError when the call is already cancelled
        self._record = record
        self.read_cap = None
        self._inner.write(buffer, timeout)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        cap = self.read_cap
        if cap is not None:
            timeout = cap if timeout is None else min(timeout, cap)
        sock = self._sock
        if sock is None:
            data = self._inner.read(max_bytes, timeout)
        else:  # httpcore's read, without its exception-map context manager (one per chunk of a stream)
            try:
                sock.settimeout(timeout)
                data = sock.recv(max_bytes)
            except TimeoutError as exc:
                raise httpcore.ReadTimeout(str(exc) or "timed out") from exc
            except OSError as exc:
                raise httpcore.ReadError(str(exc) or type(exc).__name__) from exc
        record = self._record
        if data and record is not None:
            record.received = True
        return data

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        return _WatchedStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


def _readable_socket(stream: httpcore.NetworkStream) -> socket.socket | None:
    """The socket a read of ``stream`` may ``recv`` from directly, or None to read through ``stream``.

    A plain TCP stream's socket, or a TLS stream's own ``SSLSocket``; not the
    outer socket of TLS inside TLS (a proxy tunnel), whose bytes are still encrypted.
    """
    sock = stream.get_extra_info("socket")
    if not isinstance(sock, socket.socket):
        return None
    if stream.get_extra_info("ssl_object") is not None and not isinstance(sock, ssl.SSLSocket):
        return None
    return sock


class _WatchedAsyncStream(httpcore.AsyncNetworkStream):
    """Async twin of :class:`_WatchedStream`."""

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._record: Watcher | None = None
        self.requests = 0
        self.read_cap: float | None = None

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        record = _current.get()
        if record is not None and record.stream is not self:
            record.watch(self)
        self._record = record
        self.read_cap = None
        await self._inner.write(buffer, timeout)

    def read(self, max_bytes: int, timeout: float | None = None) -> Awaitable[bytes]:
        """The inner stream's read, capped; once the call has its first byte, that read's own awaitable.

        Not a coroutine function: a paced stream reads once a chunk, and a coroutine of its own
        here was one more frame to make and resume each time, for a mark already made.
        """
        cap = self.read_cap
        if cap is not None:
            timeout = cap if timeout is None else min(timeout, cap)
        record = self._record
        if record is None or record.received:
            return self._inner.read(max_bytes, timeout)
        return self._first_read(record, max_bytes, timeout)

    async def _first_read(self, record: Watcher, max_bytes: int, timeout: float | None) -> bytes:
        data = await self._inner.read(max_bytes, timeout)
        if data:
            record.received = True
        return data

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> Any:
        return _WatchedAsyncStream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _WatchingBackend(httpcore.NetworkBackend):
    """The pool's network backend, its new connections wrapped (arguments passed on as httpcore gives them)."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        return _WatchedStream(self._inner.connect_tcp(*args, **kwargs))

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        return _WatchedStream(self._inner.connect_unix_socket(*args, **kwargs))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _AsyncWatchingBackend(httpcore.AsyncNetworkBackend):
    """Async twin of :class:`_WatchingBackend`."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        return _WatchedAsyncStream(await self._inner.connect_tcp(*args, **kwargs))

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        return _WatchedAsyncStream(await self._inner.connect_unix_socket(*args, **kwargs))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def _watch(transport: Any, wrap: type) -> Any:
    """Route ``transport``'s new connections through a watching backend (when its pool has the seam)."""
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is not None:
        pool._network_backend = wrap(backend)
    return transport


# -- the pooled clients ---------------------------------------------------------------------

_pool_lock = threading.Lock()
_sync_clients: dict[tuple[str, float], httpx.Client] = {}


class _LoopPool:
    """One event loop's async clients, and the async generator that closes them with the loop."""

    __slots__ = ("clients", "closer", "__weakref__")

    def __init__(self) -> None:
        self.clients: dict[tuple[str, float], httpx.AsyncClient] = {}
        self.closer: Any = None


_C = TypeVar("_C", httpx.Client, httpx.AsyncClient)

_async_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopPool] = weakref.WeakKeyDictionary()


class _NoCookies(http.cookiejar.CookieJar):
    """A cookie jar that keeps nothing.

    A pooled client serves every caller of its base URL: in ``agent-core serve``,
    every tenant. httpx keeps each ``Set-Cookie`` it is answered with and sends it
    on the client's later requests, so a session cookie an upstream (or a
    gateway before it) gave one tenant's key would ride on the next tenant's
    request. LLM APIs authenticate each request by its key; nothing is lost.
    """

    def extract_cookies(self, response: Any, request: Any) -> None:
        return None

    def set_cookie(self, cookie: http.cookiejar.Cookie) -> None:
        return None


class _NoCookieBox(httpx.Cookies):
    """The pooled clients' cookies: :class:`_NoCookies`, and no work per response.

    httpx hands every response to its cookies, which wrap request and response in
    ``urllib`` stand-ins before the jar is asked (about 1 % of a server request's CPU);
    a jar that keeps nothing needs none of it.
    """

    def extract_cookies(self, response: httpx.Response) -> None:
        return None


def _without_cookies(client: _C) -> _C:
    """``client``, its cookies replaced by a :class:`_NoCookieBox` (its jar is already a :class:`_NoCookies`)."""
    if isinstance(getattr(client, "_cookies", None), httpx.Cookies):  # httpx's own attribute; else the jar suffices
        client._cookies = _NoCookieBox(_NoCookies())
    return client


def _routed(client: _C) -> _C:
    """``client`` with a :class:`._direct.Route` to its pool, when the pool is a flat one of lean connections."""
    pool = getattr(client._transport, "_pool", None)
    if isinstance(pool, (FlatPool, FlatAsyncPool)) and pool.lean:
        setattr(client, ROUTE, Route(client, pool))
    return client


def client_timeout(seconds: float) -> httpx.Timeout:
    """The pooled clients' timeout: ``seconds`` per network step, connecting at most 15 s; ``inf``: none."""
    if math.isinf(seconds):
        return httpx.Timeout(None, connect=15.0)
    # Connecting should fail fast even when a long read timeout suits slow models.
    return httpx.Timeout(seconds, connect=min(seconds, 15.0))


def sync_client_for(base_url: str, timeout: float) -> httpx.Client:
    """The pooled sync client for ``(base_url, timeout)``, created on first use."""
    key = (base_url, float(timeout))
    with _pool_lock:
        client = _sync_clients.get(key)
        if client is None or client.is_closed:
            transport = _watch(_flat_sync(httpx.HTTPTransport(limits=_LIMITS)), _WatchingBackend)
            client = _routed(_without_cookies(httpx.Client(timeout=client_timeout(timeout), limits=_LIMITS,
                                                           transport=transport, cookies=_NoCookies())))
            _sync_clients[key] = client
        return client


async def _close_with_loop(pool: _LoopPool) -> AsyncIterator[None]:
    """Suspended until the loop finalises its async generators, then closes ``pool``'s clients."""
    try:
        yield
    finally:
        clients = list(pool.clients.values())
        pool.clients.clear()
        for client in clients:
            await client.aclose()


def _start_closer(pool: _LoopPool) -> None:
    closer = _close_with_loop(pool)
    # __anext__() registers the generator with the running loop (its first-iteration
    # hook); one send() runs it to its yield without awaiting anything.
    step = closer.__anext__()
    try:
        step.send(None)
    except StopIteration:
        pass
    pool.closer = closer


def _flat_sync(transport: httpx.HTTPTransport) -> httpx.HTTPTransport:
    """``transport`` with :class:`._flat_pool.FlatPool` in place of httpcore's pool (see :func:`_flat`)."""
    pool = getattr(transport, "_pool", None)
    if type(pool) is httpcore.ConnectionPool:
        transport._pool = FlatPool.replacing(pool, KEEPALIVE_CONNECTIONS)  # type: ignore[assignment]
    return transport


def _flat(transport: httpx.AsyncHTTPTransport) -> httpx.AsyncHTTPTransport:
    """``transport`` with :class:`._flat_pool.FlatAsyncPool` in place of httpcore's pool (O(1) per request).

    Its connections are :mod:`._aio_stream`'s, on the loop's own transports (no epoll
    registration added and removed per read, no cancel scope per read).
    """
    pool = getattr(transport, "_pool", None)
    if type(pool) is httpcore.AsyncConnectionPool:  # a proxy pool (a subclass) keeps its own
        transport._pool = FlatAsyncPool.replacing(pool, KEEPALIVE_CONNECTIONS,  # type: ignore[assignment]
                                                  network_backend=AsyncioBackend())
    return transport


def async_client_for(base_url: str, timeout: float) -> httpx.AsyncClient:
    """The pooled async client for ``(base_url, timeout)`` in the running event loop."""
    loop = asyncio.get_running_loop()
    key = (base_url, float(timeout))
    with _pool_lock:
        pool = _async_pools.get(loop)
        if pool is None:
            pool = _async_pools[loop] = _LoopPool()
            _start_closer(pool)
        client = pool.clients.get(key)
        if client is None or client.is_closed:
            transport = _watch(_flat(httpx.AsyncHTTPTransport(limits=_LIMITS)), _AsyncWatchingBackend)
            client = _routed(_without_cookies(httpx.AsyncClient(timeout=client_timeout(timeout), limits=_LIMITS,
                                                                transport=transport, cookies=_NoCookies())))
            pool.clients[key] = client
        return client


def close_clients() -> None:
    """Close every pooled sync client (also run at interpreter exit).

    Async clients belong to their event loop; they are closed when the loop
    shuts down its async generators (``asyncio.run`` does), or earlier from
    inside it with :func:`aclose_clients`.
    """
    with _pool_lock:
        clients = list(_sync_clients.values())
        _sync_clients.clear()
    for client in clients:
        client.close()


async def aclose_clients() -> None:
    """Close the pooled async clients of the running event loop."""
    loop = asyncio.get_running_loop()
    with _pool_lock:
        pool = _async_pools.pop(loop, None)
    if pool is None:
        return
    clients = list(pool.clients.values())
    pool.clients.clear()
    for client in clients:
        await client.aclose()
    if pool.closer is not None:
        await pool.closer.aclose()


atexit.register(close_clients)
