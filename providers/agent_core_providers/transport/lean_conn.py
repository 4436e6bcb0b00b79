"""HTTP/1.1 connections for the pooled clients: the request and the response head (:mod:`.head`), then a lean body.

Theory of operation
-------------------
httpcore's HTTP/1.1 connection hands every read of a body to h11 through
generators, trace blocks and exception maps: several times the CPU per chunk
of a bare socket loop (``benchmarks/bench_transports.py`` measures it).

These connections write the request and read the response head with
:mod:`.head` (h11's grammar and refusals; h11 is its test oracle), then the
body with :mod:`.framing`: one ``read`` and one ``feed`` per chunk. The
pooled clients' pools (:mod:`.flat_pool`) open them; clients injected by a
user keep whatever transport they were built with.

Kept from httpcore, as httpx and :mod:`._inflight` rely on it: a failed
request write is not raised at once, the answer is read anyway (a server may
answer early; a cancel shuts the socket so that read fails at once); errors
are httpcore's; the body's read timeout is taken when the body starts (so
:func:`._streaming._cap_reads` can shorten it); the response carries
``http_version``, ``reason_phrase`` and ``network_stream``. A connection goes
back to its pool only after a complete body with nothing after it, on an
HTTP/1.1 answer that allows keep-alive (no ``Connection: close``).

One request at a time per connection (the pool sees to that). The sync and
async classes differ only in their awaits; :class:`Cycle` decides, without I/O.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpcore

from .framing import Framing, UntilClose, framing_for
from .head import Head, HeadReader, RequestWriter

__all__ = ["AsyncLeanConnection", "Cycle", "LeanConnection"]

#: bytes asked of the network per read (httpcore's figure)
READ_SIZE = 64 * 1024
#: largest response head accepted (httpcore's figure)
MAX_HEAD = 100 * 1024

_NEW, _ACTIVE, _IDLE, _CLOSED = range(4)


class Cycle:
    """One request and the head of its response, without I/O (the grammar is :mod:`.head`'s)."""

    __slots__ = ("_reader", "_writer", "request", "write_failed")

    def __init__(self, request: httpcore.Request) -> None:
        self.request = request
        self._writer = RequestWriter()
        self._reader = HeadReader(MAX_HEAD)
        self.write_failed = False

    def head(self) -> bytes:  # the request line and headers
        return self._writer.head(self.request.method, self.request.url.target, self.request.headers)

    def data(self, chunk: bytes) -> bytes:
        return self._writer.data(chunk)  # more bytes than the Content-Length said: LocalProtocolError

    def end(self) -> bytes:
        return self._writer.end()  # fewer bytes than the Content-Length said: LocalProtocolError

    def response(self) -> Head | None:
        """The final response head once it is in, else None (read more; informational heads are skipped)."""
        while True:
            head = self._reader.next_head()
            if head is None or head.status_code >= 200:
                return head

    def receive(self, data: bytes) -> None:
        if not data:  # only ever asked before the final head
            raise httpcore.RemoteProtocolError("Server disconnected without sending a response.")
        self._reader.feed(data)

    def answer(self, head: Head, stream: Any) -> tuple[httpcore.Response, Framing, bytes, bool]:
        """The response for httpx, its body's decoder, the body bytes already read, and whether keep-alive holds."""
        lowered = head.lowered
        framing = framing_for(self.request.method, head.status_code, lowered)
        keep = (head.http_version == b"1.1" and not self.write_failed
                and not isinstance(framing, UntilClose)
                and not _says_close(lowered) and not _says_close(self.request.headers))
        response = httpcore.Response(
            status=head.status_code, headers=head.items, content=None,
            extensions={"http_version": b"HTTP/" + head.http_version, "reason_phrase": head.reason,
                        "network_stream": stream})
        return response, framing, self._reader.rest, keep


def _says_close(headers: Any) -> bool:
    for name, value in headers:
        if len(name) == 10 and name.lower() == b"connection" and b"close" in (t.strip().lower() for t in value.split(b",")):
            return True
    return False


class _Base:
    """What both connections hold: the origin, the options, the state and the keep-alive clock."""

    def __init__(self, origin: httpcore.Origin, *, network_backend: Any, ssl_context: Any = None,
                 keepalive_expiry: float | None = None, local_address: str | None = None,
                 uds: str | None = None, socket_options: Any = None) -> None:
        self._origin = origin
        self._backend = network_backend
        self._ssl_context = ssl_context
        self._keepalive_expiry = keepalive_expiry
        self._local_address = local_address
        self._uds = uds
        self._socket_options = socket_options
        self._stream: Any = None
        self._state = _NEW
        self._expire_at: float | None = None
        # for the pool's reuse rule (:mod:`.flat_pool`): carried an answer before, that answer's framing, its end
        self.reused, self.kind, self.idle_since = False, None, 0.0

    def _begin(self) -> None:
        if self._state not in (_NEW, _IDLE):
            raise httpcore.ConnectionNotAvailable()
        self.reused = self._state == _IDLE
        self._state = _ACTIVE
        self._expire_at = None

    def _connect_args(self, request: httpcore.Request) -> tuple[dict[str, Any], float | None]:
        timeout = request.extensions.get("timeout", {}).get("connect")
        if self._uds is not None:
            return {"path": self._uds, "timeout": timeout, "socket_options": self._socket_options}, timeout
        return {"host": self._origin.host.decode("ascii"), "port": self._origin.port, "timeout": timeout,
                "local_address": self._local_address, "socket_options": self._socket_options}, timeout

    def _tls_args(self, request: httpcore.Request, timeout: float | None) -> dict[str, Any] | None:
        if self._origin.scheme != b"https":
            return None
        context = self._ssl_context if self._ssl_context is not None else ssl.create_default_context()
        context.set_alpn_protocols(["http/1.1"])
        host = request.extensions.get("sni_hostname") or self._origin.host.decode("ascii")
        return {"ssl_context": context, "server_hostname": host, "timeout": timeout}

    def _ended(self, reusable: bool) -> bool:
        """The body is done with; True when the socket must now be closed."""
        if self._state != _ACTIVE:
            return False
        if reusable:
            self._state = _IDLE
            self.idle_since = now = time.monotonic()
            if self._keepalive_expiry is not None:
                self._expire_at = now + self._keepalive_expiry
            return False
        self._state = _CLOSED
        return True

    # the pool's questions (as httpcore's connections answer them)
    def is_available(self) -> bool:
        return self._state == _IDLE

    def has_expired(self) -> bool:
        if self._expire_at is not None and time.monotonic() > self._expire_at:
            return True
        # an idle socket with something to read: the server closed it (or sent what nobody asked for)
        return self._state == _IDLE and bool(self._stream.get_extra_info("is_readable"))

    def is_idle(self) -> bool:
        return self._state == _IDLE

    def is_closed(self) -> bool:
        return self._state == _CLOSED

    @property
    def network_stream(self) -> Any:  # the pool's settle wait reads it (:mod:`.flat_pool`)
        return self._stream


class LeanConnection(_Base):
    """A sync HTTP/1.1 connection (see the module's docstring)."""

    def handle_request(self, request: httpcore.Request) -> httpcore.Response:
        self._begin()
        try:
            timeouts = request.extensions.get("timeout", {})
            if self._stream is None:
                self._stream = self._connect(request)
            stream, cycle = self._stream, Cycle(request)
            try:
                self._send(stream, cycle, timeouts.get("write"))
            except httpcore.WriteError:  # read the answer anyway (see the module's docstring)
                cycle.write_failed = True
            read = timeouts.get("read")
            event = cycle.response()
            while event is None:
                cycle.receive(stream.read(READ_SIZE, read))
                event = cycle.response()
            response, framing, leftover, keep = cycle.answer(event, stream)
            self.kind = type(framing)
        except BaseException:
            self.close()
            raise
        response.stream = _Body(self, request, framing, leftover, keep)
        return response

    def _connect(self, request: httpcore.Request) -> Any:
        args, timeout = self._connect_args(request)
        backend = self._backend
        stream = backend.connect_tcp(**args) if self._uds is None else backend.connect_unix_socket(**args)
        tls = self._tls_args(request, timeout)
        return stream if tls is None else stream.start_tls(**tls)

    @staticmethod
    def _send(stream: Any, cycle: Cycle, timeout: float | None) -> None:
        out = [cycle.head()]
        for chunk in cycle.request.stream:  # type: ignore[union-attr]
            data = cycle.data(chunk)
            if len(data) > READ_SIZE:  # a big piece (a long history) goes as it is: a join would copy it
                stream.write(b"".join(out), timeout)
                stream.write(data, timeout)
                out = []
                continue
            out.append(data)
            if sum(map(len, out)) > READ_SIZE:
                stream.write(b"".join(out), timeout)
                out = []
        out.append(cycle.end())
        stream.write(b"".join(out), timeout)

    def end_body(self, reusable: bool) -> None:
        if self._ended(reusable):
            self._stream.close()

    def close(self) -> None:
        self._state = _CLOSED
        if self._stream is not None:
            self._stream.close()


class _BodyState:
    """What both bodies hold, and whether the connection may carry another request when one ends."""

    __slots__ = ("_conn", "_ended", "_framing", "_keep", "_leftover", "_request")

    def __init__(self, conn: Any, request: httpcore.Request, framing: Framing, leftover: bytes, keep: bool) -> None:
        self._conn, self._request, self._framing = conn, request, framing
        self._leftover, self._keep, self._ended = leftover, keep, False

    def _finished(self, complete: bool) -> bool | None:
        """None when the end was already handled; else whether the connection is reusable."""
        if self._ended:
            return None
        self._ended = True
        return complete and self._keep and not self._leftover and not self._framing.leftover


class _Body(_BodyState):
    """A sync response body: one read and one framing step per chunk."""

    __slots__ = ()

    def __iter__(self) -> Iterator[bytes]:
        framing = self._framing
        read = self._conn.network_stream.read
        timeout = self._request.extensions.get("timeout", {}).get("read")  # now: it may have been shortened
        try:
            if self._leftover:
                pieces, self._leftover = framing.feed(self._leftover), b""
                yield from pieces
            while not framing.done:
                raw = read(READ_SIZE, timeout)
                if not raw:
                    framing.eof()
                    break
                yield from framing.feed(raw)
        except BaseException:
            self._end(False)
            raise
        self._end(True)

    def close(self) -> None:
        self._end(self._framing.done)

    def _end(self, complete: bool) -> None:
        reusable = self._finished(complete)
        if reusable is not None:
            self._conn.end_body(reusable)


class AsyncLeanConnection(_Base):
    """The async twin of :class:`LeanConnection`."""

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        self._begin()
        try:
            timeouts = request.extensions.get("timeout", {})
            if self._stream is None:
                self._stream = await self._connect(request)
            stream, cycle = self._stream, Cycle(request)
            try:
                await self._send(stream, cycle, timeouts.get("write"))
            except httpcore.WriteError:
                cycle.write_failed = True
            read = timeouts.get("read")
            event = cycle.response()
            while event is None:
                cycle.receive(await stream.read(READ_SIZE, read))
                event = cycle.response()
            response, framing, leftover, keep = cycle.answer(event, stream)
            self.kind = type(framing)
        except BaseException:
            await self.aclose()
            raise
        response.stream = _AsyncBody(self, request, framing, leftover, keep)
        return response

    async def _connect(self, request: httpcore.Request) -> Any:
        args, timeout = self._connect_args(request)
        backend = self._backend
        if self._uds is None:
            stream = await backend.connect_tcp(**args)
        else:
            stream = await backend.connect_unix_socket(**args)
        tls = self._tls_args(request, timeout)
        return stream if tls is None else await stream.start_tls(**tls)

    @staticmethod
    async def _send(stream: Any, cycle: Cycle, timeout: float | None) -> None:
        out = [cycle.head()]
        async for chunk in cycle.request.stream:  # type: ignore[union-attr]
            data = cycle.data(chunk)
            if len(data) > READ_SIZE:  # a big piece (a long history) goes as it is: a join would copy it
                await stream.write(b"".join(out), timeout)
                await stream.write(data, timeout)
                out = []
                continue
            out.append(data)
            if sum(map(len, out)) > READ_SIZE:
                await stream.write(b"".join(out), timeout)
                out = []
        out.append(cycle.end())
        await stream.write(b"".join(out), timeout)

    async def end_body(self, reusable: bool) -> None:
        if self._ended(reusable):
            await self._stream.aclose()

    async def aclose(self) -> None:
        self._state = _CLOSED
        if self._stream is not None:
            await self._stream.aclose()


class _AsyncBody(_BodyState):
    """An async response body (see :class:`_Body`)."""

    __slots__ = ()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        framing = self._framing
        read = self._conn.network_stream.read
        timeout = self._request.extensions.get("timeout", {}).get("read")
        try:
            if self._leftover:
                pieces, self._leftover = framing.feed(self._leftover), b""
                for piece in pieces:
                    yield piece
            while not framing.done:
                raw = await read(READ_SIZE, timeout)
                if not raw:
                    framing.eof()
                    break
                for piece in framing.feed(raw):
                    yield piece
        except BaseException:
            await self._end(False)
            raise
        await self._end(True)

    async def aclose(self) -> None:
        await self._end(self._framing.done)

    def settled(self) -> bool:
        """End a body read to its end on a connection that stays open: no I/O, so nothing to await.

        True when the body is now (or already was) ended; False when :meth:`aclose` must
        end it (the connection is then closed, which awaits).
        """
        if self._ended:
            return True
        framing = self._framing
        if not (framing.done and self._keep and not self._leftover and not framing.leftover):
            return False
        self._ended = True
        self._conn._ended(True)  # back to idle: closes nothing
        return True

    async def _end(self, complete: bool) -> None:
        reusable = self._finished(complete)
        if reusable is not None:
            await self._conn.end_body(reusable)
