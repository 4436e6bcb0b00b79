"""httpcore network streams on asyncio's own transports, which keep reading between reads.

Theory of operation
-------------------
httpcore's default async backend reads through anyio, whose socket stream
stops the transport reading after every read and starts it again before the
next (``pause_reading`` / ``resume_reading``: an epoll registration removed
and added again per network read) and puts every read inside a cancel scope
with a deadline. A model's stream arrives one small read at a time, so that
was paid for every chunk, and reading the upstream became one of the largest
shares of ``agent-core serve``'s CPU under hundreds of paced streams.

Here an :class:`asyncio.Protocol` keeps what arrives in a queue and the
transport keeps reading, until more than :data:`HIGH_WATER` bytes wait
unread (then it pauses, and resumes once they are read). A read takes what
is queued at once; only when nothing is there does it wait, on one future,
and what arrives then is handed to it as that future's result, never queued
(a paced stream's every read goes this way).
The read timeout is a deadline the connection's one timer checks when it
fires (re-armed for a later deadline, never rescheduled per read): a paced
stream's reads each wait, and a timer added and removed per read cost as much
as the read itself. The deadline belongs to the read that waits, and every
wait sets it, an unbounded one to no deadline at all: a timer left armed by an
earlier read (a drain's short cap, a ``chunk_timeout_s``) may still fire, but
it only checks the deadline of the read waiting now, so it can never time out
a later request on the same pooled connection. The protocol also knows at once when
the server closed the connection, which is what ``is_readable`` asks of an
idle pooled connection.

Errors are httpcore's (``ConnectError``, ``ReadTimeout``, ``ReadError``...),
as its own backends raise them, so httpx maps them as before. The socket
(``get_extra_info("socket")``) is the transport's, so a cancel that shuts it
down wakes a waiting read with the end of the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import ssl
from collections import deque
from typing import Any

import httpcore

__all__ = ["HIGH_WATER", "AsyncioBackend"]

_Future = asyncio.Future

#: unread bytes at which the transport stops reading until the reader catches up
HIGH_WATER = 1 << 20


class _Reader(asyncio.Protocol):
    """Queues what the transport reads; wakes the one waiting read."""

    def __init__(self) -> None:
        self.queue: deque[bytes] = deque()
        self.queued = 0
        self.waiter: asyncio.Future[bytes | None] | None = None  # done with the data itself, or None
        self.eof = False
        self.error: BaseException | None = None
        self.transport: asyncio.Transport | None = None
        self.paused = False
        self.drained: asyncio.Future[None] | None = None  # set while writing is paused
        self.loop: asyncio.AbstractEventLoop | None = None
        self.deadline = 0.0  # when the waiting read times out (the loop's clock)
        self.timer: asyncio.TimerHandle | None = None
        self.timer_at = 0.0
        self.timed_out = False

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.loop = asyncio.get_running_loop()

    def wait(self, timeout: float | None) -> asyncio.Future[bytes | None]:
        """A future for the next data (or the end); it also ends, with ``timed_out`` set, after ``timeout``.

        Its result is the data when it arrived while the queue was empty (handed over, never
        queued); None when it ended otherwise (data queued, the end, an error, the timeout).
        """
        loop = self.loop
        assert loop is not None
        # asyncio.Future() binds to the running loop, which is this connection's (reads run on it);
        # loop.create_future() gives the same future through a keyword call, about twice the cost
        self.waiter = fut = _Future()
        self.timed_out = False
        if timeout is None:
            self.deadline = math.inf  # this read waits for ever, whatever an earlier read armed
        else:
            self.deadline = deadline = loop.time() + timeout
            if self.timer is None or deadline < self.timer_at:
                self._arm(deadline)
        return fut

    def _arm(self, when: float) -> None:
        if self.timer is not None:
            self.timer.cancel()
        assert self.loop is not None
        self.timer = self.loop.call_at(when, self._on_timer)
        self.timer_at = when

    def _on_timer(self) -> None:
        self.timer = None
        waiter = self.waiter
        if waiter is None or waiter.done():
            return  # no read waits: the next one arms the timer again
        assert self.loop is not None
        if self.loop.time() >= self.deadline:
            self.timed_out = True
            waiter.set_result(None)
        elif self.deadline < math.inf:  # the read that waits now began later than the one the timer was set for
            self._arm(self.deadline)

    def disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def data_received(self, data: bytes) -> None:
        waiter = self.waiter
        if waiter is not None and not self.queue and not waiter.done():
            waiter.set_result(data)  # the usual read of a paced stream: straight to the read that waits
            return
        self.queue.append(data)
        self.queued += len(data)
        if self.queued > HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # let the transport close itself

    def connection_lost(self, exc: BaseException | None) -> None:
        self.eof = True
        self.error = exc
        self.disarm()
        self._wake()
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)

    def pause_writing(self) -> None:
        if self.drained is None or self.drained.done():
            self.drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def take(self, max_bytes: int) -> bytes:
        data = self.queue.popleft()
        if len(data) > max_bytes:
            data, rest = data[:max_bytes], data[max_bytes:]
            self.queue.appendleft(rest)
        self.queued -= len(data)
        if self.paused and self.queued <= HIGH_WATER // 2 and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        return data


async def _wait(fut: asyncio.Future[None], timeout: float | None) -> bool:
    """Await ``fut``; False when ``timeout`` seconds passed first (``fut`` is then cancelled)."""
    if timeout is None:
        await fut
        return True
    timer = asyncio.get_running_loop().call_later(timeout, fut.cancel)
    try:
        await fut
    except asyncio.CancelledError:
        if not _task_cancelling():  # the timer cancelled the future, not someone the task
            return False
        raise
    finally:
        timer.cancel()
    return True


def _task_cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection: reads from :class:`_Reader`'s queue, writes to the transport."""

    def __init__(self, transport: asyncio.Transport, reader: _Reader) -> None:
        self._transport = transport
        self._reader = reader

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        reader = self._reader
        if not reader.queue:
            if reader.eof:
                return b""
            fut = reader.wait(timeout)
            try:
                data = await fut
            except BaseException:
                reader.waiter = None
                if fut.done() and not fut.cancelled() and fut.result() is not None:
                    # handed over, then the task was cancelled before it could take it: kept for a later read
                    reader.queue.appendleft(fut.result())
                    reader.queued += len(fut.result())
                raise
            reader.waiter = None
            if data is not None:
                if len(data) > max_bytes:
                    reader.queue.appendleft(data[max_bytes:])  # before anything queued since
                    reader.queued += len(data) - max_bytes
                    return data[:max_bytes]
                return data
            if reader.timed_out and not reader.queue:
                raise httpcore.ReadTimeout("timed out reading from the upstream")
            if not reader.queue:
                if reader.error is not None:
                    raise httpcore.ReadError(str(reader.error) or type(reader.error).__name__)
                return b""  # the end of the stream (a shutdown by a cancel ends it too)
        return reader.take(max_bytes)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        if self._transport.is_closing():
            raise httpcore.WriteError("the connection is closed")
        try:
            self._transport.write(buffer)
        except (OSError, RuntimeError) as exc:
            raise httpcore.WriteError(str(exc)) from exc
        if self._transport.is_closing():  # the send failed (a reset, a broken pipe): asyncio closes, never raises
            raise httpcore.WriteError("the upstream closed the connection while the request was written")
        reader = self._reader
        drained = reader.drained
        if drained is not None and not drained.done():
            if not await _wait(drained, timeout):
                raise httpcore.WriteTimeout("timed out writing to the upstream")
            if reader.error is not None:  # lost with bytes of the request still unsent
                raise httpcore.WriteError(str(reader.error) or type(reader.error).__name__)

    async def aclose(self) -> None:
        self._reader.disarm()
        self._transport.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            transport = await asyncio.wait_for(
                loop.start_tls(self._transport, self._reader, ssl_context, server_hostname=server_hostname),
                timeout)
        except TimeoutError as exc:
            self._transport.close()
            raise httpcore.ConnectTimeout("timed out in the TLS handshake") from exc
        except (OSError, ssl.SSLError, ConnectionError) as exc:
            self._transport.close()
            raise httpcore.ConnectError(str(exc)) from exc
        self._reader.transport = transport
        return AsyncioStream(transport, self._reader)

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":
            return self._transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._transport.get_extra_info("sockname")
        if info == "server_addr":
            return self._transport.get_extra_info("peername")
        if info == "socket":
            return self._transport.get_extra_info("socket")
        if info == "is_readable":  # asked of idle connections: anything there, or the end, means it is done
            return bool(self._reader.queue) or self._reader.eof
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """Opens :class:`AsyncioStream` connections on the running loop (asyncio or uvloop)."""

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None, socket_options: Any = None) -> AsyncioStream:
        loop = asyncio.get_running_loop()
        local = (local_address, 0) if local_address else None
        opening = loop.create_connection(_Reader, host, port, local_addr=local)
        return await _opened(opening, timeout, socket_options)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> AsyncioStream:
        opening = asyncio.get_running_loop().create_unix_connection(_Reader, path)
        return await _opened(opening, timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


async def _opened(opening: Any, timeout: float | None, socket_options: Any) -> AsyncioStream:
    try:
        transport, reader = await asyncio.wait_for(opening, timeout)
    except TimeoutError as exc:
        raise httpcore.ConnectTimeout("timed out connecting to the upstream") from exc
    except OSError as exc:
        raise httpcore.ConnectError(str(exc)) from exc
    sock = transport.get_extra_info("socket")
    for option in socket_options or ():
        with contextlib.suppress(OSError):
            sock.setsockopt(*option)
    return AsyncioStream(transport, reader)
