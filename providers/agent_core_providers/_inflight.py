"""Calls in flight: cancellation from any thread or task, deadlines, and waking whoever waits.

Every call registers an :class:`InFlight` record in its provider instance's
:class:`InFlightTable` under its request id. ``cancel(request_id)`` marks
the record, wakes a retry sleep, and shuts down the socket of the request:
from the moment the request is written (see :mod:`._pool`), so a server that
has not sent its headers yet is no obstacle, and also after the headers for
injected clients. Shutting a socket down, unlike closing a response from a
foreign thread, wakes a reader blocked in ``recv`` at once in both the sync
and the async (selector) case; the attempt then raises
:class:`~agent_core.errors.ProviderRequestCancelled`. ``deadline_s`` arms a
timer that does the same and raises :class:`~agent_core.errors.LLMTimeoutError`
instead.

Stock httpx's connections (``transport: httpx``, a proxy) are not watched
streams: there the record follows the request through httpcore's public
``trace`` request extension (:meth:`InFlight.trace`), which reports each new
connection's stream when it opens, a failed write of the request, and the
response head's arrival. A cancel then shuts a new connection's socket before
the headers too, and one that comes before a reused connection writes the
request stops it there; the resend rule sees failed writes as on our own
transport.

A record is used by one call at a time, sync or async: the exchange binds it
to the running event loop when it starts in async mode (:meth:`InFlight.bind_loop`),
so timers and wake-ups go through that loop instead of threads.
"""

from __future__ import annotations

import asyncio
import math
import socket
import threading
import uuid
from collections.abc import Callable
from typing import Any

import httpcore
import httpx
from agent_core.errors import LLMTimeoutError, ProviderRequestCancelled

from ._call import HTTPCall

__all__ = ["InFlight", "InFlightTable"]


#: guards the making of a record's wake event against a cancel from another thread
_EVENTS = threading.Lock()

#: httpcore's trace events (``<layer>.<step>.<outcome>``) that hand over a connection's new stream
_OPENED = ("connect_tcp.complete", "connect_unix_socket.complete", "start_tls.complete")
#: ... and those that say a write of the request failed
_WRITE_FAILED = ("send_request_headers.failed", "send_request_body.failed")


class InFlight:
    """One running call: its current connection and response, and whether it was stopped.

    ``cancelled`` (by the caller) and ``expired`` (``deadline_s`` passed) both
    stop the call; :meth:`raise_if_cancelled` raises the matching error.
    ``stream``, ``unsent`` and ``received`` describe the current attempt's
    connection (set by the watched streams of :mod:`._pool`, or by
    :meth:`trace`): ``unsent`` when a write of its request failed, which
    proves the upstream never read the whole request (see :mod:`._retry`).
    ``reads`` is the watched stream itself, whose reads a drain may cap
    (None on stock httpx's connections).
    """

    __slots__ = (
        "request_id",
        "cancelled",
        "expired",
        "response",
        "stream",
        "reads",
        "unsent",
        "received",
        "_wake",
        "_loop",
        "_async_wake",
        "_timer",
        "_drain_timer",
        "_deadline",
        "_provider",
    )

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.cancelled = False
        self.expired = False
        self.response: httpx.Response | None = None
        self.stream: Any = None
        self.reads: Any = None
        self.unsent = False
        self.received = False
        # what a wait before a retry blocks on, made by the first such wait (most calls never wait):
        # a cancel sets the flags first and then wakes what exists, a wait makes its event and then
        # reads the flags, so one of the two always sees the other
        self._wake: threading.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._async_wake: asyncio.Event | None = None
        self._timer: Any = None
        self._drain_timer: Any = None
        self._deadline: float | None = None
        self._provider: str | None = None

    def bind_loop(self) -> None:
        """Remember the running loop so a cancel from another thread can wake it."""
        self._loop = asyncio.get_running_loop()

    def arm(self, call: HTTPCall) -> None:
        """Start the ``deadline`` timer of ``call`` (if it has one)."""
        self._provider = call.provider
        if call.deadline is None or math.isinf(call.deadline):
            return
        self._deadline = call.deadline
        self._timer = self._later(call.deadline, self.expire)

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def arm_drain(self, seconds: float) -> None:
        """Shut the current response's socket if it is still being drained ``seconds`` from now."""
        self._drain_timer = self._later(seconds, self._abort_response)

    def _later(self, seconds: float, action: Callable[[], None]) -> Any:
        """Run ``action`` in ``seconds``: on the bound event loop, else on a daemon timer thread.

        Either handle has ``cancel()``.
        """
        if self._loop is not None:
            return self._loop.call_later(seconds, action)
        timer = threading.Timer(seconds, action)
        timer.daemon = True
        timer.start()
        return timer

    def end_drain(self) -> None:
        if self._drain_timer is not None:
            self._drain_timer.cancel()
            self._drain_timer = None

    def _abort_response(self) -> None:
        response = self.response
        if response is not None:
            _abort(response, self._loop)

    def begin_attempt(self) -> None:
        self.stream = self.reads = None
        self.unsent = False
        self.received = False

    def watch(self, stream: Any) -> None:
        """Called by a watched stream on the first write of this attempt's request."""
        self.stream = self.reads = stream
        self.received = False
        if self.cancelled or self.expired:  # checked after publishing the stream: a cancel sees one or the other
            # The connection (httpcore's, and .transport.lean_conn's alike) swallows a failed request
            # write and goes on to read the answer (a server may answer early): shut the
            # socket so that read fails at once instead of waiting out the read timeout for
            # an answer to nothing.
            _shutdown(stream.get_extra_info("socket"))
            raise httpcore.WriteError("request cancelled before it was sent")

    def trace(self, name: str, info: dict[str, Any]) -> None:
        """httpcore's ``trace`` request extension, for stock httpx's connections (see the module's docstring).

        Raises:
            httpcore.LocalProtocolError: the call was cancelled (or ran out of time) before its request was written.
        """
        if name.endswith(_OPENED):
            stream = info.get("return_value")
            if stream is not None:
                self.stream = stream
                if self.cancelled or self.expired:
                    _shutdown(stream.get_extra_info("socket"))
        elif name.endswith("send_request_headers.started"):
            if self.cancelled or self.expired:
                # not a WriteError: httpcore swallows that one to read an early answer, and there is none
                raise httpcore.LocalProtocolError("request cancelled before it was sent")
        elif name.endswith(_WRITE_FAILED):
            if isinstance(info.get("exception"), httpcore.WriteError):
                self.unsent = True
        elif name.endswith("receive_response_headers.complete"):
            self.received = True

    async def atrace(self, name: str, info: dict[str, Any]) -> None:
        """The async form of :meth:`trace` (httpcore awaits an async client's trace)."""
        self.trace(name, info)

    def cancel(self) -> None:
        self.cancelled = True
        self._interrupt()

    def expire(self) -> None:
        self.expired = True
        self._interrupt()

    def _interrupt(self) -> None:
        with _EVENTS:
            wake = self._wake
        if wake is not None:
            wake.set()
        if self._loop is not None and self._async_wake is not None:
            try:
                self._loop.call_soon_threadsafe(self._async_wake.set)
            except RuntimeError:  # the loop is already closed
                pass
        stream = self.stream
        if stream is not None:
            _shutdown(stream.get_extra_info("socket"))
        response = self.response
        if response is not None:
            _abort(response, self._loop)

    def sleep(self, seconds: float) -> bool:
        """Sleep (sync); True when woken by a cancel or the deadline."""
        with _EVENTS:
            if self._wake is None:
                self._wake = threading.Event()
            wake = self._wake
        if self.cancelled or self.expired:
            return True
        return wake.wait(seconds)

    async def asleep(self, seconds: float) -> bool:
        """Sleep (async); True when woken by a cancel or the deadline."""
        if self._async_wake is None:
            self._async_wake = asyncio.Event()  # on the loop's thread: the cancel's callback runs there too
        if self.cancelled or self.expired:
            return True
        try:
            await asyncio.wait_for(self._async_wake.wait(), seconds)
        except asyncio.TimeoutError:
            return self.cancelled or self.expired
        return True

    def raise_if_cancelled(self) -> None:
        if self.cancelled:
            raise ProviderRequestCancelled(self.request_id)
        if self.expired:
            raise LLMTimeoutError(
                f"the request did not finish within its deadline_s of {self._deadline:g}s",
                provider=self._provider,
                retryable=False,
            )


def _shutdown(sock: Any) -> bool:
    """Shut ``sock`` down so a blocked reader wakes; False when there is no socket to shut."""
    if sock is None:
        return False
    try:
        if isinstance(sock, socket.socket):
            # The base method: ssl.SSLSocket.shutdown would also drop its
            # SSL object under the feet of the thread reading from it.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        else:  # asyncio's TransportSocket, or uvloop's pseudo-socket
            _shutdown_transport_socket(sock)
    except OSError:
        pass  # already closed: the reader is waking up anyway
    return True


def _shutdown_transport_socket(sock: Any) -> None:
    """``shutdown`` on an event loop's stand-in for a socket.

    uvloop's stand-in (which uvicorn picks when uvloop is installed) refuses
    ``shutdown`` with a TypeError; the descriptor is then shut through a
    socket object made on it and detached again, so the loop still owns it.
    """
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except TypeError:
        fd = sock.fileno()
        if fd < 0:  # already closed: its reader is waking up anyway
            return
        twin = socket.socket(fileno=fd)
        try:
            twin.shutdown(socket.SHUT_RDWR)
        finally:
            twin.detach()


def _abort(response: httpx.Response, loop: asyncio.AbstractEventLoop | None) -> None:
    """Wake whoever reads ``response``: shut its socket down, else close it."""
    stream = response.extensions.get("network_stream")
    if _shutdown(stream.get_extra_info("socket") if stream is not None else None):
        return
    # No socket (an injected in-memory transport): close the response instead.
    if loop is None:
        response.close()
    else:
        try:
            loop.call_soon_threadsafe(lambda: loop.create_task(response.aclose()))
        except RuntimeError:
            pass


class InFlightTable:
    """The calls running on one provider instance, by request id (thread-safe).

    A cancel can arrive between the engine handing the request to this
    provider and the call opening its record (the engine attaches the
    provider first, then calls it). Such an early cancel is remembered, and
    the call that later opens under that id starts out cancelled instead of
    running to the end. Provider instances live for one request, so the
    remembered ids cannot pile up.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, InFlight] = {}
        self._cancelled_early: set[str] = set()

    def open(self, request_id: str | None) -> InFlight:
        record = InFlight(request_id or f"anonymous-{uuid.uuid4().hex}")
        with self._lock:
            self._items[record.request_id] = record
            early = record.request_id in self._cancelled_early
        if early:
            record.cancel()
        return record

    def close(self, record: InFlight) -> None:
        record.disarm()
        with self._lock:
            if self._items.get(record.request_id) is record:
                del self._items[record.request_id]

    def cancel(self, request_id: str) -> bool:
        """Cancel the call for ``request_id``; False when none is running."""
        with self._lock:
            record = self._items.get(request_id)
            if record is None:
                self._cancelled_early.add(request_id)
        if record is None:
            return False
        record.cancel()
        return True
