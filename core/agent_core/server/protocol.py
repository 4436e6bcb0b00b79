"""uvicorn's HTTP/1.1 protocol with a deadline for a request's headers.

uvicorn closes a kept-alive connection that stays idle, but a client that
opens a connection and then sends its headers a byte at a time is never timed
out: each byte resets nothing and the connection is held for as long as the
client likes. Enough such clients hold every file descriptor of the process.
Here a connection must deliver a complete request head within
``header_timeout_s`` of opening, and again of each response ending; otherwise
it is closed. The ASGI app never sees such a request (the head is not
complete), which is why this lives in the HTTP server and not in
:mod:`agent_core.server.guard`.

The protocol also writes through :class:`~agent_core.server.coalesce.CoalescingTransport`:
the frames one loop turn produces leave in one socket send.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from .coalesce import CoalescingTransport

__all__ = ["with_header_timeout"]


def with_header_timeout(timeout_s: float) -> type[H11Protocol]:
    """An ``H11Protocol`` class (uvicorn's ``http=`` option) closing connections slow to send headers."""

    class HeaderTimeoutProtocol(H11Protocol):
        _header_timer: Any = None
        _waiting_on: Any = None

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
            super().handle_events()
            if self._header_timer is not None and self.cycle is not self._waiting_on:
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeaderTimeoutProtocol
