"""The connection's word that its client hung up, offered to the routes as :data:`~agent_core.server.http.wire.ON_HANGUP`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

__all__ = ["Hangup"]


class Hangup:
    """Who to tell if one request's client hangs up before its response is complete (:data:`ON_HANGUP`).

    The routes used to start a task per request that waited on ``receive`` for the disconnect;
    the connection knows when it is lost, so it calls them instead. Each callback runs as a
    loop callback of its own, as the task's call did, not inside ``connection_lost``.
    """

    __slots__ = ("callbacks", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.callbacks: list[Callable[[], Any]] | None = []  # None once the client has gone

    def watch(self, callback: Callable[[], Any]) -> Callable[[], None]:
        if self.callbacks is None:  # already gone: as a task would have found at its first receive
            self.loop.call_soon(callback)
            return _nothing
        self.callbacks.append(callback)

        def stop() -> None:
            if self.callbacks:
                self.callbacks[:] = [c for c in self.callbacks if c is not callback]

        return stop

    def fire(self) -> None:
        callbacks, self.callbacks = self.callbacks or [], None
        for callback in callbacks:
            self.loop.call_soon(callback)


def _nothing() -> None:
    pass
