"""The pooled clients' watched network streams: the sockets a cancel can reach, and what a write proved.

Theory of operation
-------------------
The pooled clients' transports (:mod:`._pool`) open their connections
through :class:`_WatchingBackend`, which wraps each network stream. While an
exchange (:mod:`._exchange`) sends a request it sets :data:`_current` to the
call's in-flight record (:func:`bound`); the first write of the request on a
stream hands the stream to that record (``record.watch(stream)``). From then
on a cancel (or the ``deadline_s`` timer) can shut the socket down even
before the response headers arrived, which is where a slow model keeps a
client waiting longest, and the record knows whether a *write of the request
failed* and whether *any byte* of the answer came back: a request whose write
failed was never read whole by the upstream, and is sent again at once
(:mod:`._retry`).

The hook is httpcore's public ``network_backend`` interface: the transport's
own pools (:mod:`._seam`) open connections through a watching backend. Stock httpx's connections (clients injected by
the user, ``transport: httpx``, a proxy) are not wrapped: the record follows
them through httpcore's ``trace`` extension instead (:mod:`._inflight`).
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

import httpcore

__all__ = ["Watcher", "bound", "watch_async_backend", "watch_sync_backend"]


class Watcher(Protocol):
    """What a watched stream reports to (the in-flight record, :mod:`._inflight`)."""

    stream: Any
    received: bool
    unsent: bool

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
        self.read_cap: float | None = None  # shorter read timeout while draining a finished body

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        record = _current.get()
        if record is not None and record.stream is not self:
            record.watch(self)  # raises httpcore.WriteError when the call is already cancelled
        self._record = record
        self.read_cap = None
        try:
            self._inner.write(buffer, timeout)
        except httpcore.WriteError:
            if record is not None:
                record.unsent = True  # the upstream cannot have read the whole request
            raise

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
        self.read_cap: float | None = None

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        record = _current.get()
        if record is not None and record.stream is not self:
            record.watch(self)
        self._record = record
        self.read_cap = None
        try:
            await self._inner.write(buffer, timeout)
        except httpcore.WriteError:
            if record is not None:
                record.unsent = True
            raise

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


def watch_sync_backend(backend: Any) -> Any:
    """``backend``, its new connections watched (for a pool this package builds itself)."""
    return _WatchingBackend(backend)


def watch_async_backend(backend: Any) -> Any:
    """The async twin of :func:`watch_sync_backend`."""
    return _AsyncWatchingBackend(backend)
