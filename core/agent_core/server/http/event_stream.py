"""The streamed response of the facades: its middle parts go straight to the connection when it can take them.

Every part of a streamed body went through starlette's ``send`` wrappers
(the exception middleware's, the server-error middleware's, the access log's
when it logs) before uvicorn's own ``send``. For a body part none of them
does anything: they note the response's start, which has gone out by then.
Under ``agent-core serve`` the connection's ``send`` is offered in the
request's ASGI ``extensions`` (:data:`BODY_SEND`, set by
:mod:`agent_core.server.http.uvicorn_tuning`), and :class:`EventStreamResponse` sends
the middle parts of its body with it. The start and the end of the body
still go through the wrappers, so each of them sees the response begin and
end as before. Served any other way (another ASGI server, a test client),
there is no such extension and every part takes the usual way.

Who notices a client that hangs up: the producer. Each route that answers
with this response (the three facades through
:func:`~agent_core.server.facades.runner.watch`, the sessions API's
turns) starts its own watch (:func:`~agent_core.server.http.wire.watch_hangup`)
before the stream opens, and it cancels the upstream request; the engine then ends the event
stream, and the body ends with it (what is still written goes nowhere).
:class:`starlette.responses.StreamingResponse` would listen a second time,
in a task group around a task of its own, and cancel the body's iteration;
that is left out here, so a new route using this response must watch the
client itself.

The body runs in a task of its own. In the request's task, each network read of a stream
resumed every frame between the task and the body's loop: uvicorn's app call, the access log,
the gate's three, the trace context, starlette's application, its two middlewares, the
router and the route: about twenty frames, resumed twice a chunk (once asked for the next
frame, once woken with it). A task of its own starts at the body's loop, so a chunk resumes
the half-dozen frames of the stream itself; the request's task waits once, for the end.
Awaiting the task passes a cancel of the request's task on to it (a shutdown's, or a test's).

A body may send its own parts (:class:`Pushed`): the facades' relay does, one
coroutine from the frames to the connection. Its parts each join the frames
that were ready together and are marked :data:`WHOLE_BATCH`, and the
connection writes such a part at once rather than keeping it to the end of
the loop turn (:meth:`~agent_core.server.http.uvicorn_tuning.coalesce.CoalescingTransport.write_alone`).
Under ``agent-core serve`` such a body is also handed the connection's
:data:`BODY_WRITE`: a plain function that writes a middle part then and there
when nothing stands in the way, so a paced chunk builds no message and awaits
no ``send``; when it answers False, the part goes through ``send`` as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.responses import StreamingResponse

__all__ = ["BODY_SEND", "BODY_WRITE", "WHOLE_BATCH", "EventStreamResponse", "Pushed"]

#: the ASGI ``extensions`` key under which ``agent-core serve`` offers the connection's own ``send``
BODY_SEND = "agent_core.body_send"
#: set in a body message that holds every frame that was ready (the facades' relayed parts):
#: the connection writes it at once instead of keeping it to the end of the loop turn
WHOLE_BATCH = "agent_core.whole_batch"
#: the extension holding the connection's ``write(body) -> bool`` for a middle body part: True once
#: the part is written (what a ``send`` of it marked :data:`WHOLE_BATCH` would have written), False
#: when it must go through ``send`` instead (a body the connection does not frame, a client gone,
#: writing paused until the client reads, the response complete). Set by :mod:`.uvicorn_tuning`.
BODY_WRITE = "agent_core.body_write"


class Pushed:
    """A body that sends its own parts: ``push(send, write)`` awaits ``send`` with each ASGI body message.

    For a body whose loop is best written as one coroutine (the facades' relay,
    :class:`~agent_core.server.http.ready.Relay`): the response awaits it with the
    connection's ``send`` instead of iterating a generator per part. ``write`` is
    the connection's :data:`BODY_WRITE`, or None where there is none. The end of
    the body (``more_body: False``) is still the response's to send.
    """

    __slots__ = ("push",)

    def __init__(self, push: Callable[[Any, Any], Awaitable[None]]) -> None:
        self.push = push

    def __aiter__(self) -> Any:  # starlette takes an async iterable; only EventStreamResponse reads this one
        raise TypeError("a pushed body is sent by EventStreamResponse, not iterated")


class EventStreamResponse(StreamingResponse):
    """A :class:`StreamingResponse` whose middle body parts skip the ``send`` wrappers (see the module)."""

    _body_send: Any = None
    _body_write: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        extensions = scope.get("extensions")
        if extensions:
            self._body_send, self._body_write = extensions.get(BODY_SEND), extensions.get(BODY_WRITE)
        # Without the task group starlette adds to listen for the client hanging up: every
        # producer of this response already listens for that itself and cancels its upstream
        # request (see the module). The group cost a tenth of a streamed request's CPU, for its
        # cancel scopes and a second listener.
        #
        # The body runs in a task of its own, awaited here (see the module: a shallow stack).
        # A cancel of this task reaches it, as awaiting a task passes a cancel on.
        await asyncio.get_running_loop().create_task(self.stream_response(send))
        if self.background is not None:
            await self.background()

    async def stream_response(self, send: Any) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        body_send = self._body_send or send
        body = self.body_iterator
        if body.__class__ is Pushed:
            await body.push(body_send, self._body_write)  # type: ignore[attr-defined]
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        async for chunk in body:
            if not isinstance(chunk, (bytes, memoryview)):
                chunk = chunk.encode(self.charset)
            await body_send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
