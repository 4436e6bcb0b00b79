"""One socket send per event-loop turn, however many response writes that turn made.

uvicorn writes every ASGI message to the transport at once, and the transport
tries to send it at once: one ``send`` system call per SSE frame, and two for
a plain response (its head, then its body). On a fast upstream one network
read of the model's stream holds dozens of chunks, which the engine and the
facade turn into frames without waiting on anything, so all of them are
written in the same turn of the event loop. :class:`CoalescingTransport`
keeps the writes of a turn and hands them to the real transport joined, in a
callback that runs once the turn is over: the bytes, their order and the end
of the response are what they were, in fewer system calls.

A streamed body's middle part, which already joins the frames one upstream
read produced, is written at once when nothing of the turn is kept
(:meth:`CoalescingTransport.write_alone`): a paced stream's chunk then costs
no loop callback of its own.

Whatever ends the connection (``close``, ``write_eof``, a question about the
write buffer) first flushes what is kept; ``abort`` drops it, as it drops the
real transport's buffer. Flow control is unchanged: the real transport still
pauses the protocol when its buffer fills, one loop turn later at most, and a
turn writes only what one read of the upstream produced.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["CoalescingTransport"]


class CoalescingTransport:
    """Wraps a connection's transport; ``write`` is kept until the end of the loop turn."""

    __slots__ = ("_inner", "_loop", "_parts", "_scheduled")

    def __init__(self, inner: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._inner = inner
        self._loop = loop
        self._parts: list[bytes] = []
        self._scheduled = False

    def write(self, data: bytes) -> None:
        if not data:
            return
        self._parts.append(data)
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self.flush)

    def write_alone(self, data: bytes) -> None:
        """Write ``data`` to the real transport now when nothing of this turn is kept (the order holds).

        For a part that is already everything one upstream read produced (the facades
        join the frames that were ready together): keeping it would only cost a loop
        callback, and the send is one either way.
        """
        if self._parts or self._inner.is_closing():
            self.write(data)
        else:
            self._inner.write(data)

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        """Hand what this turn wrote to the real transport, as one write."""
        self._scheduled = False
        parts = self._parts
        if not parts:
            return
        self._parts = []
        if self._inner.is_closing():  # the client is gone: writing would only log warnings
            return
        self._inner.write(parts[0] if len(parts) == 1 else b"".join(parts))

    def close(self) -> None:
        self.flush()
        self._inner.close()

    def write_eof(self) -> None:
        self.flush()
        self._inner.write_eof()

    def abort(self) -> None:
        self._parts = []
        self._inner.abort()

    def get_write_buffer_size(self) -> int:
        return self._inner.get_write_buffer_size() + sum(len(p) for p in self._parts)

    def __getattr__(self, name: str) -> Any:  # the rest (extra info, reading, flow control) is the real one's
        return getattr(self._inner, name)
