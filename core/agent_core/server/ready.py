"""The frames of a response that are ready together, sent as one ASGI message.

Theory of operation
-------------------
On a fast upstream one network read holds dozens of chunks; the engine and a
facade turn them into frames without waiting on anything, and each frame went
through starlette's response loop, three ``send`` wrappers and uvicorn's h11
writer on its own: about a quarter of ``agent-core serve``'s CPU per chunk on
a full-speed stream. :func:`ready_together` asks the frame generator for its
next frame by stepping the awaitable by hand once: a frame that comes back at
once joins the batch; the first step that would wait sends the batch first
and then waits, as ``await`` would have. A paced stream (one chunk per read)
gets batches of one, as before.

Waiting by hand: a step that would wait hands back what it waits on (an
asyncio future, or None to yield one loop turn). :func:`_resume` yields that
to the task, which resumes it as it resumes any coroutine (``send(None)``,
or the exception, a cancel, thrown in).

A step left half-way: when the consumer stops while a step waits (the client
is gone and the response's iterator is closed between the batch and the
wait), the step is finished by throwing ``CancelledError`` into it, as the
task's cancel would have; so the frame generator unwinds its ``finally``
blocks (the engine's, the provider's) and is not left running, which would
make its ``aclose`` fail.

A batch holds at most :data:`MAX_FRAMES` frames or :data:`MAX_BYTES` bytes,
so a generator that never waits (a scripted provider) still streams.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import AsyncIterator, Awaitable, Generator
from typing import Any

__all__ = ["MAX_BYTES", "MAX_FRAMES", "ready_together"]

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
        try:
            waiting = step.send(None)
        except StopIteration as done:
            return done.value


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


async def ready_together(frames: AsyncIterator[bytes]) -> AsyncIterator[list[bytes]]:
    """``frames`` in lists: each list the frames that were ready without waiting (see the module's docstring)."""
    next_frame = frames.__anext__
    batch: list[bytes] = []
    size = 0
    step: Awaitable[bytes] | None = None
    waiting: Any = None
    try:
        while True:
            step = next_frame()
            try:
                waiting = step.send(None)  # type: ignore[attr-defined]
            except StopIteration as done:  # ready at once
                step = None
                batch.append(done.value)
                size += len(done.value)
                if len(batch) < MAX_FRAMES and size < MAX_BYTES:
                    continue
                yield batch
                batch, size = [], 0
                continue
            except StopAsyncIteration:
                step = None
                break
            except Exception:
                step = None
                if batch:  # what was ready still goes out before the failure
                    yield batch
                    batch = []
                raise
            if batch:  # the next frame must wait: send what is ready first
                yield batch
                batch, size = [], 0
            pending, step = step, None
            try:
                frame = await _resume(pending, waiting)
            except StopAsyncIteration:
                break
            batch.append(frame)
            size += len(frame)
        if batch:
            yield batch
    finally:
        if step is not None:  # stopped between a batch and its wait
            await _unwind(step, waiting)
