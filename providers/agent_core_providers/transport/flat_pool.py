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

Origins that close after an answer: some servers end the connection right
after certain answers without saying so in a header (llama.cpp's server does
after every streamed answer, tens of microseconds to milliseconds after the
last chunk, while its head says ``Keep-Alive``). A request written on such a
connection before its close arrived meets the close instead of an answer,
and as the upstream may have read it, that is a retry that counts (see
:mod:`agent_core_providers._retry`), with its backoff. So the pool learns, per origin and kind of
answer (its framing: chunked, sized...), what the origin does: an idle
connection found closed within :data:`PROMPT_CLOSE` of its answer's end, or a
reused one closed before any byte of an answer, marks the origin as one that
closes after that kind of answer, and its connections are closed instead of
pooled after it (each request opens a fresh one); a reused connection that
carries an answer, or an idle one still open :data:`SETTLE` after its answer,
marks it as one that keeps them. Until either is known, a reuse sooner than
that after an answer waits out the rest of :data:`SETTLE` for the close (a read
that ends at once when it comes).

It is the pool of :class:`._seam.AsyncLeanTransport` (and :class:`FlatPool` of
:class:`._seam.LeanTransport`): ``handle_async_request`` / ``aclose``, its
connections opened through the watching backend it is given (so the watched
streams of :mod:`.watched` see every write), and httpcore's errors, which the
seam turns into httpx's. Its connections are :mod:`.lean_conn`'s
(HTTP/1.1 with a lean body reader); a transport set up for HTTP/2 or connect
retries keeps httpcore's connections, which do those.

:class:`FlatPool` is the same pool for the sync clients, whose requests come
from many threads: the stacks are changed under a lock, and connections are
closed outside it.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import Any, Self

import anyio
import httpcore

from .lean_conn import AsyncLeanConnection, LeanConnection

__all__ = ["PROMPT_CLOSE", "SETTLE", "FlatAsyncPool", "FlatPool"]

#: an idle connection its origin closed within this many seconds of its answer's end: the origin closes after those
PROMPT_CLOSE = 0.25
#: how long after an answer's end the first reuse of an origin's connection waits for the origin to close it
SETTLE = 0.05

_CLOSES, _KEEPS = "closes", "keeps"


class _Stacks:
    """What both pools keep, with the stack work that does no I/O: take an idle connection, put one back."""

    def __init__(self, *, network_backend: Any, max_keepalive: int, keepalive_expiry: float | None,
                 ssl_context: Any = None, http1: bool = True, http2: bool = False, retries: int = 0,
                 local_address: str | None = None, uds: str | None = None, socket_options: Any = None) -> None:
        self._network_backend = network_backend
        self._max_keepalive = max_keepalive
        self._options = {"ssl_context": ssl_context, "keepalive_expiry": keepalive_expiry, "http1": http1,
                         "http2": http2, "retries": retries, "local_address": local_address, "uds": uds,
                         "socket_options": socket_options}
        self._idle: dict[tuple[bytes, bytes, int], deque[Any]] = {}  # by origin
        self._habits: dict[tuple[Any, ...], str] = {}  # (origin, kind of answer) -> _CLOSES / _KEEPS
        self._idle_count = 0
        self._busy: set[Any] = set()  # so a close can close them too

    @property
    def lean(self) -> bool:
        """Its connections are :mod:`.lean_conn`'s (HTTP/1.1 without connect retries), as :mod:`._direct` needs."""
        o = self._options
        return bool(o["http1"]) and not o["http2"] and not o["retries"]

    @property
    def connections(self) -> int:
        """Open connections, idle and busy (for tests and benchmarks)."""
        return self._idle_count + len(self._busy)

    def _take(self, origin: httpcore.Origin, lean: type, general: type) -> tuple[Any, list[Any], float]:
        """An idle connection to ``origin`` (or a new one, now busy), the dead ones met on the way, to close,
        and how long to wait for its origin to close it before writing (see the module's docstring)."""
        dead = []
        key = _key(origin)
        stack = self._idle.get(key)
        conn = None
        now = time.monotonic()
        while stack:
            candidate = stack.pop()
            self._idle_count -= 1
            if not candidate.is_available():
                dead.append(candidate)
            elif candidate.has_expired():
                dead.append(candidate)
                if now - getattr(candidate, "idle_since", -math.inf) < PROMPT_CLOSE:  # closed, not timed out
                    self._habits[(key, candidate.kind)] = _CLOSES
            else:
                conn = candidate
                break
        settle = 0.0
        if conn is None:
            conn = self._open(origin, lean, general)
        elif getattr(conn, "idle_since", 0.0) and (key, conn.kind) not in self._habits:  # a lean one's first reuse
            settle = SETTLE - (now - conn.idle_since)
            if settle <= 0:  # open for longer than a close after the answer would take: the origin keeps them
                self._habits[(key, conn.kind)] = _KEEPS
        self._busy.add(conn)
        return conn, dead, settle

    def _open(self, origin: httpcore.Origin, lean: type, general: type) -> Any:
        return _open(origin, self._network_backend, self._options, lean, general)

    def _closed_early(self, conn: Any, origin: httpcore.Origin, lean: type, general: type) -> Any:
        """``conn``'s origin closed it during the settle wait: learn that, and a new connection in its place."""
        self._habits[(_key(origin), conn.kind)] = _CLOSES
        self._busy.discard(conn)
        fresh = self._open(origin, lean, general)
        self._busy.add(fresh)
        return fresh

    def _learn(self, conn: Any, origin: httpcore.Origin, kind: Any, failure: BaseException | None) -> None:
        """What a reused connection's request taught about its origin after an answer of ``kind``."""
        if not getattr(conn, "reused", False):
            return
        if failure is None:
            self._habits.setdefault((_key(origin), kind), _KEEPS)
        elif isinstance(failure, (httpcore.RemoteProtocolError, httpcore.ReadError)):
            self._habits[(_key(origin), kind)] = _CLOSES  # the close was on its way when the request was written

    def _put_back(self, conn: Any, origin: httpcore.Origin) -> list[Any]:
        """``conn`` back on its origin's stack if it can carry another request; the ones to close."""
        self._busy.discard(conn)
        dead = []
        closes = self._habits.get((_key(origin), getattr(conn, "kind", None))) == _CLOSES
        if conn.is_idle() and not closes and self._idle_count < self._max_keepalive:
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
        conn, dead, settle = self._take(origin, AsyncLeanConnection, httpcore.AsyncHTTPConnection)
        await _close_all(dead)
        if settle > 0:
            try:
                closed = await _aclosed_within(conn, settle)
            except BaseException:  # a cancel: the idle connection goes back as it was
                await self._give_back(conn, origin)
                raise
            if closed:
                old, conn = conn, self._closed_early(conn, origin, AsyncLeanConnection, httpcore.AsyncHTTPConnection)
                await _close_all([old])
        kind = getattr(conn, "kind", None)
        try:
            response = await conn.handle_async_request(request)
        except BaseException as exc:
            self._learn(conn, origin, kind, exc)
            await self._give_back(conn, origin)
            raise
        self._learn(conn, origin, kind, None)
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


def _closed_within(conn: Any, seconds: float) -> bool:
    """True when ``conn``'s idle socket ends (or says anything: nobody asked) within ``seconds``."""
    try:
        conn.network_stream.read(1, seconds)
    except httpcore.ReadTimeout:
        return False  # still open: usable
    except httpcore.NetworkError:
        pass
    return True


async def _aclosed_within(conn: Any, seconds: float) -> bool:
    """The async twin of :func:`_closed_within`."""
    try:
        await conn.network_stream.read(1, seconds)
    except httpcore.ReadTimeout:
        return False
    except httpcore.NetworkError:
        pass
    return True


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
            conn, dead, settle = self._take(origin, LeanConnection, httpcore.HTTPConnection)
        for old in dead:
            old.close()
        if settle > 0 and _closed_within(conn, settle):
            with self._lock:
                old, conn = conn, self._closed_early(conn, origin, LeanConnection, httpcore.HTTPConnection)
            old.close()
        kind = getattr(conn, "kind", None)
        try:
            response = conn.handle_request(request)
        except BaseException as exc:
            with self._lock:
                self._learn(conn, origin, kind, exc)
            self._give_back(conn, origin)
            raise
        with self._lock:
            self._learn(conn, origin, kind, None)
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
