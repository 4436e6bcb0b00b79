"""The pooled httpx clients of the bundled providers, and the sockets a cancel can reach.

Theory of operation
-------------------
Provider instances live for one request, so connections are pooled here, per
``(base_url, timeout)``, in module-level clients: one sync client per key,
and async ones per event loop (an ``AsyncClient``'s connections belong to the
loop that opened them).

Transport: a pooled client is ``httpx.Client(transport=LeanTransport())`` (or
the async twin), agent-core's own HTTP/1.1 (:mod:`.transport`), unless the
config or environment picks stock httpx or a proxy applies (:mod:`._routing`).

Watched streams (:mod:`.transport.watched`): a pooled client's connections report to
the in-flight record of the request they carry, so a cancel can shut the
socket before the answer's headers, and the resend rule knows whether a
write of the request failed.

Event loops: an ``asyncio.run`` per request must not leave one client and
its sockets behind per loop. With each loop's clients an async generator is
started whose ``finally`` closes them; asyncio finalises every live async
generator when the loop shuts down (``asyncio.run`` does so), so the clients
are closed inside their own loop, before it closes.

Pool size: httpx keeps at most 20 idle connections by default, so 50 threads
sharing a client opened a new connection for most requests. The pooled
clients keep up to :data:`KEEPALIVE_CONNECTIONS` and put no cap on open ones
(the caller's concurrency is the cap). Agent-core's transport holds a flat pool
(:mod:`.transport.flat_pool`) instead of httpcore's, whose cost per request
grows with the connections it holds.

Cookies: the pooled clients keep none (:mod:`._cookies`). They are shared by
every caller of a base URL, every tenant of a server, and a kept cookie would
be sent on the next caller's request.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import math
import threading
import weakref
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import httpx

from ._cookies import NoCookies
from ._routing import OURS, Choice, route_for
from .transport import AsyncLeanTransport, LeanTransport

__all__ = [
    "KEEPALIVE_CONNECTIONS",
    "aclose_clients",
    "async_client_for",
    "client_timeout",
    "close_clients",
    "asend",
    "send",
    "sync_client_for",
    "transport_of",
]

#: Idle connections each pooled client keeps open for reuse (httpx's default is 20).
KEEPALIVE_CONNECTIONS = 128
_LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=KEEPALIVE_CONNECTIONS)


# -- the pooled clients ---------------------------------------------------------------------

_pool_lock = threading.Lock()
#: a pooled client's key: base URL, timeout, and its route (:mod:`._routing`)
_Key = tuple[str, float, Choice]

_sync_clients: dict[_Key, httpx.Client] = {}


class _LoopPool:
    """One event loop's async clients, and the async generator that closes them with the loop."""

    __slots__ = ("clients", "closer", "__weakref__")

    def __init__(self) -> None:
        self.clients: dict[_Key, httpx.AsyncClient] = {}
        self.closer: Any = None


_C = TypeVar("_C", httpx.Client, httpx.AsyncClient)

_async_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopPool] = weakref.WeakKeyDictionary()

#: each pooled client on agent-core's transport, and that transport (httpx keeps it in a private attribute)
_transports: weakref.WeakKeyDictionary[Any, LeanTransport | AsyncLeanTransport] = weakref.WeakKeyDictionary()


def transport_of(client: httpx.Client | httpx.AsyncClient) -> LeanTransport | AsyncLeanTransport | None:
    """The transport a pooled client was built with, when it is agent-core's (for tests and benchmarks)."""
    return _transports.get(client)


#: httpx's own logger: a request handed straight to the transport writes httpx's line there
_httpx_log = logging.getLogger("httpx")


def send(client: httpx.Client, request: httpx.Request) -> httpx.Response:
    """``client.send(request, stream=True)``; a pooled client on agent-core's transport hands it straight over.

    ``Client.send`` wraps the transport in auth, redirect, cookie and event-hook
    layers that do nothing for the pooled clients (no auth, redirects off, no
    cookies, no hooks), and cost about a quarter of a non-streamed request's
    CPU on the client's side: the request goes to the transport's public
    ``handle_request`` as ``Client.send`` hands it over (``build_request`` made
    it, with the client's headers and timeouts), and the response gets what
    ``Client.send`` gives it: its request, and httpx's ``HTTP Request:`` log line.
    """
    transport = _transports.get(client)
    if transport is None:
        return client.send(request, stream=True)
    try:
        response = transport.handle_request(request)  # type: ignore[union-attr]
    except httpx.RequestError as exc:
        exc.request = request  # as httpx's request context does
        raise
    return _answered(request, response)


async def asend(client: httpx.AsyncClient, request: httpx.Request) -> httpx.Response:
    """The async twin of :func:`send`."""
    transport = _transports.get(client)
    if transport is None:
        return await client.send(request, stream=True)
    try:
        response = await transport.handle_async_request(request)  # type: ignore[union-attr]
    except httpx.RequestError as exc:
        exc.request = request
        raise
    return _answered(request, response)


def _answered(request: httpx.Request, response: httpx.Response) -> httpx.Response:
    response.request = request
    if _httpx_log.isEnabledFor(logging.INFO):
        _httpx_log.info('HTTP Request: %s %s "%s %d %s"', request.method, request.url, response.http_version,
                        response.status_code, response.reason_phrase)
    return response


def client_timeout(seconds: float) -> httpx.Timeout:
    """The pooled clients' timeout: ``seconds`` per network step, connecting at most 15 s; ``inf``: none."""
    if math.isinf(seconds):
        return httpx.Timeout(None, connect=15.0)
    # Connecting should fail fast even when a long read timeout suits slow models.
    return httpx.Timeout(seconds, connect=min(seconds, 15.0))


def sync_client_for(base_url: str, timeout: float, *, proxy: str | None = None,
                    transport: str | None = None) -> httpx.Client:
    """The pooled sync client for ``(base_url, timeout)`` and its route, created on first use.

    ``proxy`` and ``transport`` are the config's keys (see :mod:`._routing`).

    Raises:
        ConfigError: ``transport`` names no transport.
    """
    route = route_for(base_url, proxy, transport)
    key = (base_url, float(timeout), route)
    with _pool_lock:
        client = _sync_clients.get(key)
        if client is None or client.is_closed:
            if route[0] == OURS:
                ours = LeanTransport(max_keepalive=KEEPALIVE_CONNECTIONS)
                client = httpx.Client(timeout=client_timeout(timeout), transport=ours, cookies=NoCookies(),
                                      follow_redirects=False)
                _transports[client] = ours
            else:
                client = httpx.Client(timeout=client_timeout(timeout), limits=_LIMITS, cookies=NoCookies(),
                                      proxy=route[1], trust_env=True, follow_redirects=False)
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


def async_client_for(base_url: str, timeout: float, *, proxy: str | None = None,
                     transport: str | None = None) -> httpx.AsyncClient:
    """The pooled async client for ``(base_url, timeout)`` and its route, in the running event loop.

    Raises:
        ConfigError: ``transport`` names no transport.
    """
    loop = asyncio.get_running_loop()
    route = route_for(base_url, proxy, transport)
    key = (base_url, float(timeout), route)
    with _pool_lock:
        pool = _async_pools.get(loop)
        if pool is None:
            pool = _async_pools[loop] = _LoopPool()
            _start_closer(pool)
        client = pool.clients.get(key)
        if client is None or client.is_closed:
            if route[0] == OURS:
                ours_async = AsyncLeanTransport(max_keepalive=KEEPALIVE_CONNECTIONS)
                client = httpx.AsyncClient(timeout=client_timeout(timeout), transport=ours_async,
                                           cookies=NoCookies(), follow_redirects=False)
                _transports[client] = ours_async
            else:
                client = httpx.AsyncClient(timeout=client_timeout(timeout), limits=_LIMITS, cookies=NoCookies(),
                                           proxy=route[1], trust_env=True, follow_redirects=False)
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
