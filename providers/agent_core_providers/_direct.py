"""The pooled clients' requests, handed to their connection pool without going through httpx's client.

Theory of operation
-------------------
A pooled client (:mod:`._pool`) has no auth, no event hooks, no redirects
and keeps no cookies, and its transport holds a :mod:`._flat_pool` pool of
:mod:`._lean_conn` connections. For such a client, httpx's ``send`` is
layers that decide nothing: an ``httpx.Request`` is built (the URL parsed,
the headers merged with the client's and normalised, the body wrapped), the
auth and redirect loops run, the transport turns the request into
httpcore's and the answer back, and every network read of a body passes
four generator layers (the response's ``aiter_raw``, its bound stream, the
transport's stream, the pool's). On a non-streamed request through
``agent-core serve`` that was about a tenth of the server's CPU.

A :class:`Route` hands the request to the pool itself and reads the body
straight from the connection. Three things keep it the same request and the
same answer as before:

- **The bytes on the wire.** Which headers go out, in which order and case,
  is httpx's own merge of the client's headers with the call's: a
  :class:`_Template` asks httpx once per URL and set of header names (with
  placeholder values) and remembers where each value goes. A request is
  then its values filled in. ``tests/providers/test_direct.py`` compares the
  bytes both paths write.
- **The answer is an ``httpx.Response``** (status, headers, extensions), so
  what reads it (the status check, the retry rule, the cancel) is unchanged.
- **Errors are httpx's.** httpcore's errors from the pool or a read of the
  body are raised as the httpx error the transport would have made of them.

Anything unusual goes through httpx as before: a method other than POST, an
empty body, a header value that is not a string, a ``Host``,
``Content-Length`` or ``Transfer-Encoding`` of the caller's, a header name
given twice, or a client that was closed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpcore
import httpx

__all__ = ["BODY_TOO_LONG", "TRANSPORT_ERRORS", "Route", "aread_direct", "as_httpx", "direct_chunks", "read_direct"]

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
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)

#: httpcore's errors (what :func:`direct_chunks` may raise; :func:`as_httpx` makes them httpx's)
TRANSPORT_ERRORS = tuple(theirs for theirs, _ in _ERRORS)

#: httpx's logger: a request sent by a route is logged as httpx logs it
_LOG = logging.getLogger("httpx")

#: the caller's headers that httpx adds or computes itself: a call naming one goes through httpx
_OWN = frozenset({"host", "content-length", "transfer-encoding"})
#: placeholder values a template is learnt with (a real header value never starts so)
_MARK = "agent-core-direct-mark-"


def as_httpx(exc: Exception) -> Exception:
    """The httpx error for httpcore's ``exc`` (``exc`` itself when it is not httpcore's)."""
    for theirs, ours in _ERRORS:
        if isinstance(exc, theirs):
            return ours(str(exc))
    return exc


class _Template:
    """Where each header of a request to one URL comes from: the client's, fixed, or the call's i-th value."""

    __slots__ = ("url", "shown", "parts", "timeout")

    def __init__(self, url: httpcore.URL, shown: httpx.URL, parts: tuple[tuple[bytes, Any], ...],
                 timeout: dict[str, Any]) -> None:
        self.url, self.shown = url, shown
        self.parts = parts  # (name, bytes value) fixed, (name, int) the call's value at that index, (name, None) the length
        self.timeout = timeout

    @classmethod
    def learn(cls, client: httpx.Client | httpx.AsyncClient, url: str, names: tuple[str, ...]) -> _Template | None:
        """What httpx would send for a POST to ``url`` with headers ``names``; None if it cannot be filled in."""
        marks = {name: f"{_MARK}{i}" for i, name in enumerate(names)}
        request = client.build_request("POST", url, headers=marks, content=b"-")
        parts: list[tuple[bytes, Any]] = []
        used = set()
        for name, value in request.headers.raw:
            if value.startswith(_MARK.encode()):
                index = value[len(_MARK):]
                if not index.isdigit():  # two of the caller's values joined: not a plain fill-in
                    return None
                used.add(int(index))
                parts.append((name, int(index)))
            elif name.lower() == b"content-length":
                parts.append((name, None))
            elif _MARK.encode() in value:
                return None
            else:
                parts.append((name, value))
        if len(used) != len(names):
            return None
        u = request.url
        target = httpcore.URL(scheme=u.raw_scheme, host=u.raw_host, port=u.port, target=u.raw_path)
        timeout = request.extensions.get("timeout")
        return cls(target, u, tuple(parts), dict(timeout) if isinstance(timeout, dict) else {})

    def headers(self, values: list[str], length: int) -> list[tuple[bytes, bytes]]:
        out = []
        for name, part in self.parts:
            if part.__class__ is int:
                out.append((name, values[part].encode("ascii")))  # as httpx encodes a str value
            elif part is None:
                out.append((name, str(length).encode("ascii")))
            else:
                out.append((name, part))
        return out


class _Request:
    """What a lean connection reads of a request: httpcore's attribute names, values already checked."""

    __slots__ = ("extensions", "headers", "method", "shown", "stream", "url")

    def __init__(self, template: _Template, headers: list[tuple[bytes, bytes]], body: bytes,
                 extensions: dict[str, Any]) -> None:
        self.method = b"POST"
        self.url, self.shown = template.url, template.shown
        self.headers = headers
        self.stream = _Body(body)
        self.extensions = extensions


class _Body:
    """A request body of bytes, as the connection iterates it (sync or async)."""

    __slots__ = ("_body",)

    def __init__(self, body: bytes) -> None:
        self._body = body

    def __iter__(self) -> Iterator[bytes]:
        yield self._body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._body


class Route:
    """A pooled client's way to its pool; :meth:`request` says whether a call can take it."""

    __slots__ = ("_client", "_lock", "_templates", "pool")

    def __init__(self, client: httpx.Client | httpx.AsyncClient, pool: Any) -> None:
        self._client = client
        self.pool = pool
        self._templates: dict[tuple[str, tuple[str, ...]], _Template | None] = {}
        self._lock = threading.Lock()

    def request(self, method: str, url: str, headers: Any, body: bytes) -> _Request | None:
        """The pool's request for this call, or None to send it through httpx."""
        if method != "POST" or not body or self._client.is_closed:
            return None
        names = tuple(headers)
        key = (url, names)
        template = self._templates.get(key, _NONE)
        if template is _NONE:
            template = self._learn(url, names)
        if template is None:
            return None
        values = [headers[name] for name in names]
        for value in values:
            if value.__class__ is not str:
                return None
        return _Request(template, template.headers(values, len(body)), body, {"timeout": dict(template.timeout)})

    def _learn(self, url: str, names: tuple[str, ...]) -> _Template | None:
        lowered = [name.lower() for name in names if isinstance(name, str)]
        usable = len(lowered) == len(names) and len(set(lowered)) == len(lowered) and not _OWN.intersection(lowered)
        try:
            template = _Template.learn(self._client, url, names) if usable else None
        except Exception:  # noqa: BLE001 - a URL or name httpx refuses: httpx refuses it again when sent
            template = None
        with self._lock:
            if len(self._templates) >= 256:  # a bound, for a server whose tenants name their own URLs
                self._templates.clear()
            self._templates[(url, names)] = template
        return template

    # -- sending -------------------------------------------------------------------------------

    def send(self, request: _Request) -> httpx.Response:
        try:
            answer = self.pool.handle_request(request)
        except Exception as exc:
            raise as_httpx(exc) from exc
        return _answered(request, httpx.Response(answer.status, headers=answer.headers,
                                                 stream=_SyncStream(answer.stream), extensions=answer.extensions))

    async def asend(self, request: _Request) -> httpx.Response:
        try:
            answer = await self.pool.handle_async_request(request)
        except Exception as exc:
            raise as_httpx(exc) from exc
        return _answered(request, httpx.Response(answer.status, headers=answer.headers,
                                                 stream=_AsyncStream(answer.stream), extensions=answer.extensions))


_NONE: Any = object()


def _answered(request: _Request, response: httpx.Response) -> httpx.Response:
    """``response``, logged as httpx logs each request it sends (its INFO line: method, URL, status)."""
    if _LOG.isEnabledFor(logging.INFO):
        _LOG.info('HTTP Request: %s %s "%s %d %s"', "POST", request.shown, response.http_version,
                  response.status_code, response.reason_phrase)
    return response


class _FromPool:
    """What both body streams hold: the pool's returning response, and its connection's own body."""

    __slots__ = ("_returning",)

    def __init__(self, returning: Any) -> None:
        self._returning = returning

    def body(self) -> Any:
        """The connection's own body iterable (httpcore's errors)."""
        return self._returning.body


class _SyncStream(_FromPool, httpx.SyncByteStream):
    """A response body from the pool: read straight from the connection, closed through the pool."""

    __slots__ = ()

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._returning.body
        except Exception as exc:
            raise as_httpx(exc) from exc

    def close(self) -> None:
        try:
            self._returning.close()
        except Exception as exc:
            raise as_httpx(exc) from exc


class _AsyncStream(_FromPool, httpx.AsyncByteStream):
    """The async twin of :class:`_SyncStream`."""

    __slots__ = ()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for part in self._returning.body:
                yield part
        except Exception as exc:
            raise as_httpx(exc) from exc

    async def aclose(self) -> None:
        try:
            await self._returning.aclose()
        except Exception as exc:
            raise as_httpx(exc) from exc


def direct_chunks(response: httpx.Response) -> Any:
    """The body's chunks read straight from the connection, or None when ``response`` did not come by a route.

    No generator layer of httpx's (it had four per read) and none of ours: a
    failed read raises httpcore's error, which the caller turns into httpx's
    with :func:`as_httpx` (see :data:`TRANSPORT_ERRORS`). Only for a body sent
    as it is (the caller checks ``Content-Encoding``).
    """
    stream = response.stream
    if stream.__class__ is _AsyncStream:
        return stream.body().__aiter__()
    if stream.__class__ is _SyncStream:
        return iter(stream.body())
    return None


#: what :func:`read_direct` answers for a body longer than its ``limit`` (the caller raises its own error)
BODY_TOO_LONG = b"<too long>"


def read_direct(response: httpx.Response, limit: int) -> bytes | None:
    """The whole body of a response that came by a route (None otherwise), without httpx's reading layers.

    A body past ``limit`` bytes is :data:`BODY_TOO_LONG`, found as it is read, never joined.
    """
    stream = response.stream
    if stream.__class__ is not _SyncStream or ", ".join(response.headers.get_list("content-encoding")):
        return None
    parts, size = [], 0
    for part in stream:
        size += len(part)
        if size > limit:
            return BODY_TOO_LONG
        parts.append(part)
    return b"".join(parts)


async def aread_direct(response: httpx.Response, limit: int) -> bytes | None:
    """The async twin of :func:`read_direct`."""
    stream = response.stream
    if stream.__class__ is not _AsyncStream or ", ".join(response.headers.get_list("content-encoding")):
        return None
    parts, size = [], 0
    async for part in stream:
        size += len(part)
        if size > limit:
            return BODY_TOO_LONG
        parts.append(part)
    return b"".join(parts)
