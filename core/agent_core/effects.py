"""The I/O seam: one pipeline generator, driven by a sync or an async driver.

The request pipeline (:mod:`agent_core.pipeline`) is a generator. It yields
either an event for the caller or an :class:`Effect`, a request to do
something that may block (call the model API, pull the next chunk, run a
tool). The driver performs the effect and sends the result back in, or throws
the exception back in at the same ``yield``, so the pipeline handles errors
where it asked. Nothing in the pipeline knows whether it runs sync or async:
the same source serves both, and only :func:`drive_sync` / :func:`drive_async`
differ (the trick httpx's auth flows use).

In async mode a plugin's native ``async`` twin is used when it has one; a
sync-only call runs in a worker thread so it never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import Any

__all__ = [
    "END", "Call", "CloseIter", "Effect", "NextItem", "OpenIter", "complete_sync", "drive_async", "drive_sync",
]

END = object()  # sent back by NextItem when the iterator is exhausted


class Effect:
    __slots__ = ()

    def run_sync(self, driver: _Driver) -> Any:
        raise NotImplementedError

    async def run_async(self, driver: _Driver) -> Any:
        raise NotImplementedError


class Call(Effect):
    """Call ``sync_fn()``; in async mode await ``async_fn()`` when given."""

    __slots__ = ("sync_fn", "async_fn", "label")

    def __init__(
        self,
        sync_fn: Callable[[], Any] | None,
        async_fn: Callable[[], Awaitable[Any]] | None = None,
        label: str = "",
    ) -> None:
        self.sync_fn = sync_fn
        self.async_fn = async_fn
        self.label = label

    def run_sync(self, driver: _Driver) -> Any:
        if self.sync_fn is None:
            if self.async_fn is None:
                raise _async_only(self.label)
            # An async-only tool or callback in a sync request: run it on a
            # private event loop (this thread has none running).
            return asyncio.run(_awaited(self.async_fn))
        result = self.sync_fn()
        if inspect.isawaitable(result):
            close = getattr(result, "close", None)
            if close:
                close()
            raise _async_only(self.label)
        return result

    async def run_async(self, driver: _Driver) -> Any:
        if self.async_fn is not None:
            return await self.async_fn()
        assert self.sync_fn is not None
        result = await asyncio.to_thread(self.sync_fn)
        if inspect.isawaitable(result):
            result = await result
        return result


async def _awaited(fn: Callable[[], Awaitable[Any]]) -> Any:
    return await fn()


class _AsyncIterInSync:
    """Iterate an async iterator from sync code, on an event loop of its own."""

    def __init__(self, ait: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._ait = ait.__aiter__()

    def __iter__(self) -> _AsyncIterInSync:
        return self

    def __next__(self) -> Any:
        if self._loop.is_closed():
            raise StopIteration
        try:
            return self._loop.run_until_complete(self._ait.__anext__())
        except StopAsyncIteration:
            self.close()
            raise StopIteration from None

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            aclose = getattr(self._ait, "aclose", None)
            if aclose is not None:
                self._loop.run_until_complete(aclose())
        finally:
            self._loop.close()


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
                it = _AsyncIterInSync(it)
        elif self.async_fn is not None:
            # An async-only iterator in a sync request: step it on a private loop.
            it = _AsyncIterInSync(self.async_fn())
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

    __slots__ = ("handle",)

    def __init__(self, handle: _Handle) -> None:
        self.handle = handle

    def run_sync(self, driver: _Driver) -> Any:
        return next(self.handle.it, END)

    async def run_async(self, driver: _Driver) -> Any:
        h = self.handle
        if h.is_async:
            try:
                return await h.it.__anext__()
            except StopAsyncIteration:
                return END
        return await asyncio.to_thread(next, h.it, END)


class CloseIter(Effect):
    """Close a handle early (cancellation); closing twice is harmless."""

    __slots__ = ("handle",)

    def __init__(self, handle: _Handle) -> None:
        self.handle = handle

    def run_sync(self, driver: _Driver) -> None:
        _close_sync(self.handle)

    async def run_async(self, driver: _Driver) -> None:
        await _close_async(self.handle)


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
    from .errors import ConfigError

    return ConfigError(
        f"{label or 'this plugin hook'} is async-only; use arequest / astream_request "
        "(or add a sync twin to the plugin)"
    )


class _Driver:
    __slots__ = ("handles",)

    def __init__(self) -> None:
        self.handles: list[_Handle] = []


def drive_sync(gen: Generator[Any, Any, Any]) -> Generator[Any, None, Any]:
    """Run the pipeline synchronously, yielding its events; returns what ``gen`` returns."""
    driver = _Driver()
    send: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                item = gen.throw(error) if error is not None else gen.send(send)
            except StopIteration as stop:
                return stop.value
            send, error = None, None
            if isinstance(item, Effect):
                try:
                    send = item.run_sync(driver)
                except Exception as exc:  # noqa: BLE001 - handed back to the pipeline
                    error = exc
            else:
                yield item
    finally:
        gen.close()
        for h in driver.handles:
            _close_sync(h)


def complete_sync(gen: Generator[Any, Any, Any]) -> Any:
    """Drive a sub-flow synchronously, dropping its events, and return its value."""
    events = drive_sync(gen)
    while True:
        try:
            next(events)
        except StopIteration as stop:
            return stop.value


async def drive_async(gen: Generator[Any, Any, Any]) -> AsyncIterator[Any]:
    """Run the same pipeline on an event loop, yielding its events."""
    driver = _Driver()
    send: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                item = gen.throw(error) if error is not None else gen.send(send)
            except StopIteration:
                return
            send, error = None, None
            if isinstance(item, Effect):
                try:
                    send = await item.run_async(driver)
                except Exception as exc:  # noqa: BLE001
                    error = exc
            else:
                yield item
    finally:
        gen.close()
        for h in driver.handles:
            await _close_async(h)
