"""The frames of a response that are ready together, sent as one ASGI message.

Theory of operation
-------------------
On a fast upstream one network read holds dozens of chunks; the engine and a
facade turn them into frames without waiting on anything, and each frame went
through starlette's response loop, three ``send`` wrappers and uvicorn's h11
writer on its own: about a quarter of ``agent-core serve``'s CPU per chunk on
a full-speed stream. :meth:`Relay.send_all` asks the frame generator for its
next frame by stepping the awaitable by hand once: a frame that comes back at
once joins the batch; the first step that would wait sends the batch first
and then waits, as ``await`` would have. A paced stream (one chunk per read)
gets batches of one, as before.

The relay is the response's loop itself (:class:`~agent_core.server.http.event_stream.EventStreamResponse`
awaits :meth:`Relay.send_all` with the connection's ``send``), not an async
generator the response iterates: on a paced stream every chunk woke the
response's loop, then a generator that owned the turn's end, then the
batching generator, each with its ``asend`` object, before the frame
generator; now it wakes one coroutine.

Waiting by hand: a step that would wait hands back what it waits on (an
asyncio future, or None to yield one loop turn). :func:`_resume` yields that
to the task; once it is done, the step goes on under ``yield from``, as any
awaited coroutine does (its later waits go to the task, a cancel is thrown
into it, its frame comes back without a Python-level StopIteration).

A step left half-way: when sending a batch fails while the next frame's step
waits (the client is gone, or the request's task is cancelled in the send),
the step is finished by throwing ``CancelledError`` into it, as the
task's cancel would have; so the frame generator unwinds its ``finally``
blocks (the engine's, the provider's) and is not left running, which would
make its ``aclose`` fail.

A batch holds at most :data:`MAX_FRAMES` frames or :data:`MAX_BYTES` bytes,
so a generator that never waits (a scripted provider) still streams.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any

from .event_stream import WHOLE_BATCH

__all__ = ["MAX_BYTES", "MAX_FRAMES", "Relay"]

#: most frames in one batch
MAX_FRAMES = 256
#: most bytes in one batch (a batch closes at the frame that reaches this)
MAX_BYTES = 64 * 1024


@types.coroutine
def _resume(step: Any, waiting: Any) -> Generator[Any, None, Any]:
    """Finish ``step``, which has yielded ``waiting``, on the current task; its value or exception."""
    while True:
        try:
            yield waiting
        # not swallowed: a cancel (or anything else thrown at the task) goes on into the step
        except BaseException as exc:  # noqa: BLE001
            try:
                waiting = step.throw(exc)
            except StopIteration as done:
                return done.value
            continue
        # What it waited on is done: from here the step is awaited as any other. Its value comes
        # back through yield from, in C; step.send(None) here would raise it as a StopIteration
        # caught in this frame (a traceback, a match) on every paced chunk.
        return (yield from step)


async def _unwind(step: Any, waiting: Any) -> None:
    """End a step left waiting: the cancel the task would have had, and whatever that runs."""
    try:
        waiting = step.throw(asyncio.CancelledError())
    except BaseException:  # noqa: BLE001 - ended, whichever way
        return
    try:
        await _resume(step, waiting)
    except BaseException:  # noqa: BLE001
        return


class Relay:
    """``frames`` sent by the response's own loop, each message the frames that were ready together.

    Not an async generator between the frames and the connection: :meth:`send_all` is
    the loop, one coroutine, that steps the frame generator by hand and sends each batch
    itself (see the module). ``finished`` turns true once a batch holding the frame
    ``is_last`` picks out is handed to ``send``: the stream said all it had to say.

    The stream's end is the relay's too, since no frame of the caller's sits around it:
    once the frame generator is closed, ``cut_short()`` is called if the task was
    cancelled, and then, however the loop ended, ``end(finished)`` is awaited.

    ``write`` (of :meth:`send_all`) is the connection's :data:`~.event_stream.BODY_WRITE` when
    it has one: each part is offered to it first, and goes through ``send`` only when it
    answers False. When ``send`` fails while the next frame is half-way, that step is unwound
    as a cancel would unwind it (the module's "a step left half-way") before the error goes on.
    """

    __slots__ = ("frames", "is_last", "cut_short", "end", "finished")

    def __init__(self, frames: AsyncIterator[bytes], is_last: Callable[[bytes], bool],
                 cut_short: Callable[[], None], end: Callable[[bool], Awaitable[None]]) -> None:
        self.frames, self.is_last, self.cut_short, self.end = frames, is_last, cut_short, end
        self.finished = False

    async def send_all(self, send: Callable[[dict[str, Any]], Awaitable[None]],
                       write: Callable[[bytes], bool] | None = None) -> None:
        """Send every frame as ASGI body parts marked :data:`WHOLE_BATCH`; a frame's failure after what was ready."""
        try:
            try:
                await self._relay(send, write)
            finally:
                await self.frames.aclose()  # type: ignore[attr-defined]
        except asyncio.CancelledError:
            self.cut_short()
            raise
        finally:
            await self.end(self.finished)

    async def _relay(self, send: Callable[[dict[str, Any]], Awaitable[None]],
                     write: Callable[[bytes], bool] | None) -> None:
        """The loop of :meth:`send_all`: batches out until the frames end; a step left half-way unwound."""
        next_frame, is_last = self.frames.__anext__, self.is_last
        batch: list[bytes] = []
        size = 0
        step: Any = None
        waiting: Any = None
        try:
            while True:
                step = next_frame()
                try:
                    waiting = step.send(None)
                except StopIteration as done:  # ready at once
                    step = None
                    batch.append(done.value)
                    size += len(done.value)
                    if len(batch) < MAX_FRAMES and size < MAX_BYTES:
                        continue
                except StopAsyncIteration:
                    step = None
                    break
                except Exception:
                    step = None
                    if batch:  # what was ready still goes out before the failure
                        self.finished = is_last(batch[-1])
                        await _out(send, write, batch)
                    raise
                if batch:  # a full batch, or the next frame must wait: send what is ready first
                    last = batch[-1]
                    self.finished = is_last(last)
                    body = last if len(batch) == 1 else b"".join(batch)
                    if write is None or not write(body):  # _out, inline: written at once, or sent
                        await send({"type": "http.response.body", "more_body": True, WHOLE_BATCH: True,
                                    "body": body})
                    batch, size = [], 0
                if step is None:
                    continue
                pending, step = step, None
                try:
                    frame = await _resume(pending, waiting)
                except StopAsyncIteration:
                    break
                batch.append(frame)
                size += len(frame)
            if batch:
                self.finished = is_last(batch[-1])
                await _out(send, write, batch)
        finally:
            if step is not None:  # send failed between a batch and its wait
                await _unwind(step, waiting)


async def _out(send: Callable[[dict[str, Any]], Awaitable[None]], write: Callable[[bytes], bool] | None,
               batch: list[bytes]) -> None:
    """One batch out: written by ``write`` when it takes it, else sent as one body part."""
    body = batch[0] if len(batch) == 1 else b"".join(batch)
    if write is None or not write(body):
        await send({"type": "http.response.body", "body": body, "more_body": True, WHOLE_BATCH: True})
