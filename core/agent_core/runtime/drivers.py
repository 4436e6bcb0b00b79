"""The two drivers of a flow of effects (:mod:`.effects`), and a flow handed out as an async iterator.

:func:`drive_sync` and :func:`drive_async` run the same generator: each
effect it yields is performed (called, or awaited) and its result or error
goes back in at the same ``yield``; anything else it yields is an event for
the caller. A :class:`~.effects.Pump` is the one effect that loops: the
driver reads an open iterator itself and hands each item to the pump's
step, so a streamed chunk resumes no generator of the flow. In async mode
every pump is read as a *source*: a read to await and a step that turns what
it gave into a batch of items (an async iterator's item, a sync iterator's
item pulled on a worker thread, or what a :class:`FlowStream`'s body read
gave its provider's step), and what comes when the reads end or fail. The
driver calls both in its own loop, so no frame stands between a network read
and the steps, and the driver knows no particular flow.

A flow inside a flow
--------------------
A provider's stream is a flow of its own (send, read the body through a
``Pump``, retry), and the engine's request pumps that stream's events into
its hot loop. Handed out as an async generator, every network read would
climb through two more layers (the provider's hook, and the driver of its
flow) before the engine's step saw its events. :class:`FlowStream` is the
same flow as an async iterator that is also such a source: it runs the inner
flow itself, and once that flow pumps its body, the engine's driver reads the
body, hands each read to the provider's step, and what that returns to the
engine's step. That is one await per network
read, from the connection to the event the caller gets. Iterated by anyone
else (``async for``), a ``FlowStream`` behaves like the async generator it
replaces, and both ways share its state, so the engine may take a first
item by hand and then pump the rest.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Generator
from contextlib import AbstractAsyncContextManager, aclosing
from typing import Any

from .effects import END, Effect, Pump, _close_async, _close_sync, _Driver

__all__ = ["FlowStream", "complete_async", "complete_sync", "drive_async", "drive_sync"]


def drive_sync(gen: Generator[Any, Any, Any]) -> Generator[Any, None, Any]:
    """Run the pipeline synchronously, yielding its events; returns what ``gen`` returns."""
    driver = _Driver(gen)
    try:
        while True:
            try:
                item = driver.resume()
            except StopIteration as stop:
                return stop.value
            if item.__class__ is Pump:
                # the hot loop, inline: one generator frame fewer per chunk than a helper
                h, step = item.handle, item.step
                try:
                    for chunk in h.it:
                        events = step(chunk)
                        if events.__class__ is not tuple:
                            yield from events  # several, or none
                        else:
                            yield events[0]  # the usual chunk: one event, no iterator
                except Exception as exc:  # noqa: BLE001 - handed back to the pipeline
                    _close_sync(h)
                    driver.error = exc
                except BaseException:
                    _close_sync(h)
                    raise
            elif isinstance(item, Effect):
                driver.perform_sync(item)
            else:
                yield item
    finally:
        driver.close_sync()


def complete_sync(gen: Generator[Any, Any, Any]) -> Any:
    """Drive a sub-flow synchronously, dropping its events, and return its value."""
    events = drive_sync(gen)
    while True:
        try:
            next(events)
        except StopIteration as stop:
            return stop.value


async def complete_async(gen: Generator[Any, Any, Any]) -> Any:
    """Drive a sub-flow on the event loop, dropping its events, and return its value (``complete_sync``'s twin).

    An async generator cannot return a value, so the flow runs inside one that keeps it.
    """
    kept: list[Any] = []

    def keeping() -> Generator[Any, Any, None]:
        kept.append((yield from gen))

    async with aclosing(drive_async(keeping())) as events:
        async for _event in events:
            pass
    return kept[0]


async def drive_async(gen: Generator[Any, Any, Any]) -> AsyncIterator[Any]:
    """Run the same pipeline on an event loop, yielding its events."""
    driver = _Driver(gen)
    try:
        while True:
            try:
                item = driver.resume()
            except StopIteration:
                return
            if item.__class__ is Pump:
                # the hot loop, inline (as in drive_sync): no generator or coroutine of its own between
                # the reads and this one, whose every resumption a chunk would pay
                h, step = item.handle, item.step
                source = h.it if h.it.__class__ is FlowStream else _Items(h)
                try:
                    batch = await source.more()
                    read, inner_step = source.reading, source.inner_step
                    while batch is not END:
                        for chunk in batch:
                            events = step(chunk)
                            if events:
                                for ev in events:
                                    yield ev
                        try:
                            batch = inner_step(await read())
                        except StopAsyncIteration:
                            batch = await source.after_body(None)
                            read, inner_step = source.reading, source.inner_step
                        except Exception as exc:  # noqa: BLE001 - the source decides who hears it
                            batch = await source.after_body(exc)
                            read, inner_step = source.reading, source.inner_step
                except Exception as exc:  # noqa: BLE001 - handed back to the pipeline
                    await _close_async(h)
                    driver.error = exc
                except BaseException:
                    await _close_async(h)
                    raise
            elif isinstance(item, Effect):
                await driver.perform_async(item)
            else:
                yield item
    finally:
        await driver.close_async()


class _Items:
    """A pump's plain iterator read as a source of batches: one item a read, each its own batch.

    A source gives the driver ``reading`` (the next read, ``StopAsyncIteration`` at the end),
    ``inner_step`` (what a read's item becomes: a batch for the pump's step), ``more()`` (what
    comes before the first read) and ``after_body(failure)`` (the batch after the reads ended or
    failed, or :data:`END`). A :class:`FlowStream` is the other source.
    """

    __slots__ = ("reading",)

    inner_step = staticmethod(lambda item: (item,))

    def __init__(self, handle: Any) -> None:
        it = handle.it
        self.reading = it.__anext__ if handle.is_async else _ThreadRead(it)

    async def more(self) -> Any:
        return ()

    async def after_body(self, failure: Exception | None) -> Any:
        if failure is not None:
            raise failure
        return END


#: what :meth:`FlowStream.advance` answers while the flow's body is being read
_PUMPING = object()

#: what :meth:`FlowStream.start` is handed: the flow, and the context it runs in (entered, then exited at the end)
FlowStart = Callable[[], "tuple[Generator[Any, Any, Any], AbstractAsyncContextManager[Any]]"]


class FlowStream:
    """A flow's events as an async iterator, whose pumps the engine's driver can run inline.

    ``start()`` is called at the first step, never before: it returns the
    flow and an async context manager, entered before the flow runs and
    exited when it ends, fails or is closed (a provider's exchange: its
    response, its in-flight record). So an iterator that is made and never
    read opens nothing.

    Read it with ``async for`` (and close it, as any async iterator that
    holds a connection), or let :func:`drive_async` pump it: see the
    module's docstring.
    """

    __slots__ = ("_start", "_context", "_driver", "_pump", "_ready", "_closed", "_loop", "reading", "inner_step")

    def __init__(self, start: FlowStart) -> None:
        self._start = start
        self._context: AbstractAsyncContextManager[Any] | None = None
        self._driver: _Driver | None = None
        self._pump: Pump | None = None  # the flow's pump while its body is being read
        self._ready: list[Any] = []  # events made but not handed out yet (``async for``)
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop it opened on, which closes it if dropped
        #: while pumping: the next read of the body (StopAsyncIteration at its end), and the flow's step
        self.reading: Callable[[], Any] = _no_read
        self.inner_step: Callable[[Any], Any] = _no_step

    def __aiter__(self) -> FlowStream:
        return self

    async def __anext__(self) -> Any:
        while not self._ready:
            batch = await self.next_batch()
            if batch is END:
                raise StopAsyncIteration
            self._ready = list(batch)
        return self._ready.pop(0)

    async def next_batch(self) -> Any:
        """The flow's next events (a list or tuple, maybe empty), or :data:`END`: one read of its body while it pumps.

        A read or step that fails is handed to the flow at its pump, which goes on from there.
        """
        while True:
            if self._ready or self._pump is None:
                got = await self.advance()
                if got is not _PUMPING:
                    return got
            try:
                return self.inner_step(await self.reading())
            except StopAsyncIteration:
                self.body_ended()
            except Exception as exc:  # noqa: BLE001 - the flow hears it at its pump
                await self.body_failed(exc)
            except BaseException:
                await self.aclose()
                raise

    async def more(self) -> Any:
        """What comes before the next read of a body: events (a list), ``()`` while a body is read, or :data:`END`.

        With :meth:`after_body`, ``reading`` and ``inner_step``, this is how :func:`drive_async` reads a
        ``FlowStream`` it pumps, with no frame of the stream's own between a read and its steps.
        """
        got = await self.advance()
        return () if got is _PUMPING else got

    async def after_body(self, failure: Exception | None) -> Any:
        """The body's reads ended (``failure`` None) or failed: the flow goes on, to what :meth:`more` says."""
        if self._pump is None:  # no body was being read (a flow that has not pumped yet)
            return await self.more()
        if failure is None:
            self.body_ended()
        else:
            await self.body_failed(failure)
        return await self.more()

    async def advance(self) -> Any:
        """Run the flow to its next events (a list), to its body being pumped (``_PUMPING``), or to its :data:`END`.

        The flow's error is raised here, after the flow and its context are closed.
        """
        if self._ready:
            ready, self._ready = self._ready, []
            return ready
        if self._pump is not None:
            return _PUMPING
        try:
            driver = self._driver
            if driver is None:
                if self._closed:
                    return END
                self._loop = asyncio.get_running_loop()
                gen, context = self._start()
                await context.__aenter__()
                self._context = context
                driver = self._driver = _Driver(gen)
            while True:
                try:
                    item = driver.resume()
                except StopIteration:
                    await self.aclose()
                    return END
                if item.__class__ is Pump:
                    self._pumps(item)
                    return _PUMPING
                if isinstance(item, Effect):
                    await driver.perform_async(item)
                else:
                    return [item]
        except BaseException:
            await self.aclose()
            raise

    def _pumps(self, pump: Pump) -> None:
        h = self._pump = pump
        it = h.handle.it
        self.reading = it.__anext__ if h.handle.is_async else _ThreadRead(it)
        self.inner_step = h.step

    def body_ended(self) -> None:
        """The body is read to its end: the flow goes on after its pump."""
        self._pump = None
        self.reading, self.inner_step = _no_read, _no_step

    async def body_failed(self, exc: Exception) -> None:
        """A read or the flow's step failed: the body is closed, and the flow hears ``exc`` at its pump."""
        pump, self._pump = self._pump, None
        self.reading, self.inner_step = _no_read, _no_step
        if pump is not None:
            await _close_async(pump.handle)
        if self._driver is not None:
            self._driver.error = exc

    async def aclose(self) -> None:
        """Close the flow and what it opened, then leave its context; once, however often it is called."""
        if self._closed:
            return
        self._closed = True
        self._pump, self._ready = None, []
        try:
            if self._driver is not None:
                await self._driver.close_async()
        finally:
            context, self._context = self._context, None
            if context is not None:
                await context.__aexit__(None, None, None)


    def __del__(self) -> None:
        # Dropped open, as ``async for`` + ``break`` leaves an iterator: closed on its loop, as asyncio
        # closes an async generator left that way, so its connection goes back to the pool.
        loop = self._loop
        if self._closed or loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(_close_later, self)
        except RuntimeError:  # the loop closed meanwhile
            pass


#: the closings scheduled by ``__del__``, held until done (the loop keeps only weak references to tasks)
_CLOSING: set[asyncio.Task[None]] = set()


def _close_later(stream: FlowStream) -> None:
    task = asyncio.ensure_future(stream.aclose())
    _CLOSING.add(task)
    task.add_done_callback(_CLOSING.discard)


class _ThreadRead:
    """The next item of a sync iterator, pulled on a worker thread (a body read by a sync client)."""

    __slots__ = ("it",)

    def __init__(self, it: Any) -> None:
        self.it = it

    async def __call__(self) -> Any:
        item = await asyncio.to_thread(next, self.it, END)
        if item is END:
            raise StopAsyncIteration
        return item


async def _no_read() -> Any:
    raise StopAsyncIteration


def _no_step(item: Any) -> Any:
    raise RuntimeError("the flow is not pumping")
