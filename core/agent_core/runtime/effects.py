"""The I/O seam: one request run, written as a generator, driven by a sync or an async driver.

The request run (:mod:`agent_core.engine.run`) is a generator. It yields
either an event for the caller or an :class:`Effect`, a request to do
something that may block (call the model API, pull the next chunk, run a
tool). The driver performs the effect and sends the result back in, or throws
the exception back in at the same ``yield``, so the pipeline handles errors
where it asked. Nothing in the pipeline knows whether it runs sync or async:
the same source serves both, and only the two drivers of :mod:`.drivers`,
``drive_sync`` and ``drive_async``, differ (the trick httpx's auth flows use).

In async mode a plugin's native ``async`` twin is used when it has one; a
sync-only call runs in a worker thread so it never blocks the event loop.

A :class:`Call` or :class:`NextItem` may carry a :class:`Guard`: a
:class:`CancellationToken` and a time limit (tools get both). The driver then
stops waiting when the limit passes (:class:`EffectTimeout`) or the token is
cancelled (:class:`EffectCancelled`). A sync hook is guarded by running it on
a daemon thread, left behind if it never returns; an async hook's task is
cancelled, so the cancellation reaches it as ``CancelledError``. Without a
time limit, a sync request runs a sync hook on its own thread and can only
tell it, through the token, that the request was cancelled.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import Any

__all__ = [
    "END", "Call", "CancellationToken", "Effect", "EffectCancelled", "EffectTimeout", "Guard",
    "NextItem", "OpenIter", "Pump",
]

from .guards import (
    AsyncIterInSync,
    CancellationToken,
    EffectCancelled,
    EffectTimeout,
    Guard,
    guarded_async,
    guarded_sync,
    refuse_inside_loop,
    run_private,
)

END = object()  # sent back by NextItem when the iterator is exhausted


class Effect:
    __slots__ = ()

    def run_sync(self, driver: _Driver) -> Any:
        raise NotImplementedError

    async def run_async(self, driver: _Driver) -> Any:
        raise NotImplementedError


class Call(Effect):
    """Call ``sync_fn()``; in async mode await ``async_fn()`` when given."""

    __slots__ = ("sync_fn", "async_fn", "label", "guard")

    def __init__(
        self,
        sync_fn: Callable[[], Any] | None,
        async_fn: Callable[[], Awaitable[Any]] | None = None,
        label: str = "",
        guard: Guard | None = None,
    ) -> None:
        self.sync_fn = sync_fn
        self.async_fn = async_fn
        self.label = label
        self.guard = guard

    def run_sync(self, driver: _Driver) -> Any:
        guard = self.guard
        if self.sync_fn is None:
            if self.async_fn is None:
                raise _async_only(self.label)
            # An async-only tool or callback in a sync request: run it on a
            # private event loop (this thread must have none running).
            refuse_inside_loop(self.label)
            async_fn, token = self.async_fn, guard.token if guard else None
            run = lambda: run_private(async_fn, token, self.label)  # noqa: E731
            return guarded_sync(run, guard, self.label) if guard and guard.limit is not None else run()
        if guard is not None and guard.limit is not None:
            result = guarded_sync(self.sync_fn, guard, self.label)
        else:
            result = self.sync_fn()
        if inspect.isawaitable(result):
            close = getattr(result, "close", None)
            if close:
                close()
            raise _async_only(self.label)
        return result

    async def run_async(self, driver: _Driver) -> Any:
        if self.guard is not None:
            result = await guarded_async(self.sync_fn, self.async_fn, self.guard, self.label)
        elif self.async_fn is not None:
            return await self.async_fn()
        else:
            assert self.sync_fn is not None
            result = await asyncio.to_thread(self.sync_fn)
        if inspect.isawaitable(result):
            result = await result
        return result


class _Handle:
    """An open iterator, sync or async, owned by the driver until closed."""

    __slots__ = ("it", "is_async", "closed")

    def __init__(self, it: Any, is_async: bool) -> None:
        self.it = it
        self.is_async = is_async
        self.closed = False


class OpenIter(Effect):
    """Open an iterator: ``sync_fn()`` returns an iterator, ``async_fn()`` an async one."""

    __slots__ = ("sync_fn", "async_fn", "label")

    def __init__(
        self,
        sync_fn: Callable[[], Iterator[Any]] | None,
        async_fn: Callable[[], AsyncIterator[Any]] | None = None,
        label: str = "",
    ) -> None:
        self.sync_fn = sync_fn
        self.async_fn = async_fn
        self.label = label

    def run_sync(self, driver: _Driver) -> _Handle:
        if self.sync_fn is not None:
            it = self.sync_fn()
            if hasattr(it, "__anext__"):
                refuse_inside_loop(self.label)
                it = AsyncIterInSync(it)
        elif self.async_fn is not None:
            # An async-only iterator in a sync request: step it on a private loop.
            refuse_inside_loop(self.label)
            it = AsyncIterInSync(self.async_fn())
        else:
            raise _async_only(self.label)
        handle = _Handle(iter(it), False)
        driver.handles.append(handle)
        return handle

    async def run_async(self, driver: _Driver) -> _Handle:
        if self.async_fn is not None:
            ait = self.async_fn()
            if inspect.isawaitable(ait) and not hasattr(ait, "__anext__"):
                ait = await ait
            handle = _Handle(ait.__aiter__(), True)
        else:
            assert self.sync_fn is not None
            it = await asyncio.to_thread(lambda: iter(self.sync_fn()))  # type: ignore[misc]
            handle = _Handle(it, False)
        driver.handles.append(handle)
        return handle


class NextItem(Effect):
    """Pull the next item from an open handle; :data:`END` when exhausted."""

    __slots__ = ("handle", "guard", "label")

    def __init__(self, handle: _Handle, guard: Guard | None = None, label: str = "") -> None:
        self.handle = handle
        self.guard = guard
        self.label = label

    def run_sync(self, driver: _Driver) -> Any:
        guard = self.guard
        if guard is not None and guard.limit is not None:
            it = self.handle.it
            return guarded_sync(lambda: next(it, END), guard, self.label)
        return next(self.handle.it, END)

    async def run_async(self, driver: _Driver) -> Any:
        h = self.handle
        if self.guard is not None:
            if h.is_async:
                return await guarded_async(None, lambda: _anext_or_end(h.it), self.guard, self.label)
            return await guarded_async(lambda: next(h.it, END), None, self.guard, self.label)
        if h.is_async:
            try:
                return await h.it.__anext__()
            except StopAsyncIteration:
                return END
        return await asyncio.to_thread(next, h.it, END)


class Pump(Effect):
    """Feed every item of an open handle to ``step`` and emit the events it returns.

    The hot path's one effect per stream: instead of the pipeline asking for
    each chunk (one effect, and a resumption of every generator frame between
    the driver and the pipeline, per chunk), the driver runs the loop itself.
    ``step(item)`` returns the events for that item: a 1-tuple for the usual
    single event (the sync driver yields it without making an iterator),
    otherwise a list (empty for none); the driver yields them at once. When ``step`` or the
    iterator raises, the handle is closed and the error is thrown back into
    the pipeline at the ``yield Pump(...)``. Its value is None.
    """

    __slots__ = ("handle", "step")

    def __init__(self, handle: _Handle, step: Callable[[Any], Any]) -> None:
        self.handle = handle
        self.step = step


async def _anext_or_end(it: Any) -> Any:
    try:
        return await it.__anext__()
    except StopAsyncIteration:
        return END


def _close_sync(h: _Handle) -> None:
    if h.closed:
        return
    h.closed = True
    close = getattr(h.it, "close", None)
    if close is not None:
        try:
            close()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass


async def _close_async(h: _Handle) -> None:
    if h.closed:
        return
    if h.is_async:
        h.closed = True
        aclose = getattr(h.it, "aclose", None)
        if aclose is not None:
            try:
                await aclose()
            except Exception:  # noqa: BLE001
                pass
    else:
        await asyncio.to_thread(_close_sync, h)


def _async_only(label: str) -> Exception:
    from ..errors import ConfigError

    return ConfigError(
        f"{label or 'this plugin hook'} is async-only; use arequest / astream_request "
        "(or add a sync twin to the plugin)"
    )


class _Driver:
    """One pipeline being driven: its generator, what goes in at the next resume, the iterators it opened."""

    __slots__ = ("gen", "send", "error", "handles")

    def __init__(self, gen: Generator[Any, Any, Any]) -> None:
        self.gen = gen
        self.send: Any = None  # the last effect's result, sent in at the next resume
        self.error: BaseException | None = None  # or its error, thrown in instead
        self.handles: list[_Handle] = []

    def resume(self) -> Any:
        """Run the pipeline to its next yield, handing it the last result or error; StopIteration when it ends."""
        send, error = self.send, self.error
        self.send = self.error = None
        return self.gen.throw(error) if error is not None else self.gen.send(send)

    def perform_sync(self, effect: Effect) -> None:
        """Perform ``effect``; its result or error goes back in at the next resume."""
        try:
            self.send = effect.run_sync(self)
        except Exception as exc:  # noqa: BLE001 - handed back to the pipeline
            self.error = exc

    async def perform_async(self, effect: Effect) -> None:
        try:
            self.send = await effect.run_async(self)
        except Exception as exc:  # noqa: BLE001 - handed back to the pipeline
            self.error = exc

    def close_sync(self) -> None:
        """Close the pipeline, then every iterator it opened."""
        self.gen.close()
        for h in self.handles:
            _close_sync(h)

    async def close_async(self) -> None:
        self.gen.close()
        for h in self.handles:
            await _close_async(h)
