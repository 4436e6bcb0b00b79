"""uvicorn's HTTP/1.1 protocol with a deadline for a request's headers.

uvicorn closes a kept-alive connection that stays idle, but a client that
opens a connection and then sends its headers a byte at a time is never timed
out: each byte resets nothing and the connection is held for as long as the
client likes. Enough such clients hold every file descriptor of the process.
Here a connection must deliver a complete request head within
``header_timeout_s`` of opening, and again of each response ending; otherwise
it is closed. The ASGI app never sees such a request (the head is not
complete), which is why this lives in the HTTP server and not in
:mod:`agent_core.server.access.guard`.

The protocol also writes through :class:`~.coalesce.CoalescingTransport`:
the frames one loop turn produces leave in one socket send.

A streamed body's parts skip h11 (:func:`_framed`), and starlette's ``send`` wrappers
too: the framed ``send`` is offered to the app in the request's ASGI ``extensions``
(:mod:`agent_core.server.http.event_stream`), with a plain ``write`` for a middle part that
needs no message and no await when the connection can take it at once. uvicorn hands every
body message to h11, which runs its state machine, builds an event object and
frames the bytes: about a sixth of what relaying one paced chunk cost. Once a
response's head is out and h11 is known to frame the body as chunks, the
middle parts are framed here (``<size in hex>CRLF<bytes>CRLF``, what h11
writes for them) and the last part, the end of the body and everything else
go through uvicorn and h11 as before, so h11's state stays true: it is not
told of data in the middle of a chunked body because none of its decisions
depend on it.

The connection also tells the routes when its client hangs up (``ON_HANGUP`` in the
``extensions``, see :class:`~.hangup.Hangup`), so no task per request waits on ``receive`` for it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

from ..event_stream import BODY_SEND, BODY_WRITE, WHOLE_BATCH
from ..wire import ON_HANGUP
from .coalesce import CoalescingTransport
from .hangup import Hangup

__all__ = ["with_header_timeout"]

_NO_BODY_STATUS = frozenset((204, 304))


def _chunked(scope: dict[str, Any], message: Any, cycle: RequestResponseCycle) -> bool:
    """Whether h11 frames the body of the response ``message`` starts as chunks.

    h11 does so for an HTTP/1.1 request when the response names no length and
    may have a body (not HEAD, not 1xx, 204 or 304). A response that says
    ``Transfer-Encoding`` itself is left to h11.
    """
    if scope.get("http_version") != "1.1" or scope.get("method") == "HEAD":
        return False
    status = message.get("status", 200)
    if status < 200 or status in _NO_BODY_STATUS:
        return False
    for name, _ in (*cycle.default_headers, *message.get("headers", ())):
        lowered = name.lower()
        if lowered == b"content-length" or lowered == b"transfer-encoding":
            return False
    return True


def _framed(cycle: RequestResponseCycle) -> tuple[Callable[[Any], Awaitable[None]], Callable[[bytes], bool]]:
    """``cycle.send``, framing the middle parts of a chunked body itself (see the module's docstring); and ``write``.

    ``write(body)`` is :data:`~.event_stream.BODY_WRITE`: it frames and writes a middle part
    at once, as ``send`` would for one marked :data:`WHOLE_BATCH`, and answers True; it
    answers False, writing nothing, whenever ``send`` would not frame the part itself (the
    body is not chunked by h11, the client is gone, writing waits for the client to read,
    the response is complete), so the caller sends it instead and uvicorn decides.
    """
    slow = cycle.send
    transport = cycle.transport
    write_alone = getattr(transport, "write_alone", transport.write)
    flow = cycle.flow
    chunked = False

    def write(body: bytes) -> bool:
        if not chunked or cycle.disconnected or flow.write_paused or cycle.response_complete:
            return False
        if body:  # h11 writes nothing for an empty part
            write_alone(b"".join((b"%x\r\n" % len(body), body, b"\r\n")))
        return True

    async def send(message: Any) -> None:
        nonlocal chunked
        if chunked:
            if (message.get("more_body") and message["type"] == "http.response.body"
                    and not cycle.disconnected and not cycle.flow.write_paused and not cycle.response_complete):
                body = message.get("body", b"")
                if body:  # h11 writes nothing for an empty part
                    framed = b"".join((b"%x\r\n" % len(body), body, b"\r\n"))  # one copy of a big body
                    if message.get(WHOLE_BATCH):  # all the frames one upstream read made: written now
                        write_alone(framed)
                    else:
                        transport.write(framed)
                return
        elif message["type"] == "http.response.start" and not cycle.response_started:
            chunked = _chunked(cycle.scope, message, cycle)
        await slow(message)

    return send, write


def with_header_timeout(timeout_s: float) -> type[H11Protocol]:
    """An ``H11Protocol`` class (uvicorn's ``http=`` option) closing connections slow to send headers."""

    class HeaderTimeoutProtocol(H11Protocol):
        _header_timer: Any = None
        _waiting_on: Any = None
        _hangup: Hangup | None = None  # the current request's

        def _arm(self) -> None:
            self._disarm()
            self._waiting_on = self.cycle  # a new request replaces the cycle once its head is complete
            self._header_timer = self.loop.call_later(timeout_s, self._header_timeout)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_timeout(self) -> None:
            self._header_timer = None
            idle = self.cycle is None or self.cycle.response_complete  # not in the middle of answering
            if self.cycle is self._waiting_on and idle and not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(CoalescingTransport(transport, self.loop))  # one send per loop turn
            self._arm()

        def handle_events(self) -> None:
            before = self.cycle
            super().handle_events()
            if self.cycle is not before and self.cycle is not None:  # a new request: its task has not run yet
                send, write = _framed(self.cycle)
                self.cycle.send = send  # type: ignore[method-assign]
                extensions = self.cycle.scope.setdefault("extensions", {})
                extensions[BODY_SEND] = send  # a streamed response's middle parts (see .event_stream)
                extensions[BODY_WRITE] = write
                self._hangup = Hangup(self.loop)
                extensions[ON_HANGUP] = self._hangup.watch
            if self._header_timer is not None and self.cycle is not self._waiting_on:
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            cycle, hangup = self.cycle, self._hangup
            super().connection_lost(exc)
            if hangup is not None and cycle is not None and cycle.disconnected:  # lost before the response ended
                hangup.fire()

    return HeaderTimeoutProtocol
