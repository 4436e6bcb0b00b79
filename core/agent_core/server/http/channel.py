"""A turn's events on their way from the task that runs it to the response that streams them.

A sessions turn runs in a task of its own, so it ends and is saved the same way
whether or not its client still listens (:mod:`agent_core.server.sessions.routes`). Between that task and
the response sits a :class:`Channel`. It holds at most :data:`UNREAD` events: a
client that keeps its connection open but stops reading makes the turn wait at
its next event, which stops reading the upstream, so the upstream's socket
buffers fill and nothing grows here. With an unbounded queue the turn would go
on pulling the upstream into memory for as long as the model kept talking.

Once the response stops reading (the client hung up, the stream was closed) the
channel drops what it holds and what still comes, and never makes the turn
wait: the turn runs to its end and saves, as a cancelled turn does.

Notes that come from outside the turn (an ``ask_user`` question) go in with
:meth:`Channel.put_nowait`, which never waits; the turn is paused while such a
note is open, so they cannot pile up.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Any

__all__ = ["UNREAD", "Channel", "Raised", "chained", "drain", "merged", "pump"]

#: Events a channel holds before the turn's next event waits for the reader.
UNREAD = 64

_END = object()


class Raised:
    """The turn's failure, travelling to the reader, who raises it there."""

    __slots__ = ("exc",)

    def __init__(self, exc: Exception) -> None:
        self.exc = exc


class Channel:
    """A single-reader queue whose writer waits while :data:`UNREAD` events are unread."""

    __slots__ = ("_items", "_limit", "_readable", "_room", "closed")

    def __init__(self, limit: int = UNREAD) -> None:
        self._items: deque[Any] = deque()
        self._limit = limit
        self._readable = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self.closed = False  # the reader left: items are dropped, the writer never waits

    async def put(self, item: Any) -> None:
        """Add ``item``; wait first while the reader is :data:`UNREAD` items behind."""
        while len(self._items) >= self._limit and not self.closed:
            self._room.clear()
            await self._room.wait()
        self.put_nowait(item)

    def put_nowait(self, item: Any) -> None:
        """Add ``item`` now, over the limit if need be (notes, and the stream's end)."""
        if not self.closed:
            self._items.append(item)
            self._readable.set()

    async def get(self) -> Any:
        """The next item; the end at once once the channel is closed (a reader still waiting is let go)."""
        while not self._items:
            if self.closed:
                return _END
            self._readable.clear()
            await self._readable.wait()
        item = self._items.popleft()
        if len(self._items) < self._limit:
            self._room.set()
        return item

    def close(self) -> None:
        """The reader is gone: drop what is held, and let the writer go on without waiting."""
        self.closed = True
        self._items.clear()
        self._room.set()
        self._readable.set()  # a reader waiting for the next item gets the end instead

    def __len__(self) -> int:
        return len(self._items)


async def pump(events: AsyncIterator[Any], channel: Channel, running: set[str]) -> None:
    """Run a turn's events into ``channel``; a failure travels as a :class:`Raised` item, then the end.

    The ids of its requests are in ``running`` while it runs (a retried turn makes several).
    """
    ids: list[str] = []
    try:
        async for event in events:
            if getattr(event, "type", None) == "start":
                ids.append(event.request_id)
                running.add(event.request_id)
            await channel.put(event)
    except Exception as exc:  # noqa: BLE001 - handed to the reader, who answers with its status
        channel.put_nowait(Raised(exc))
    finally:
        running.difference_update(ids)
        channel.put_nowait(_END)


async def drain(channel: Channel) -> AsyncIterator[Any]:
    """The channel's events until the turn's end; a :class:`Raised` failure is raised here."""
    try:
        while (item := await channel.get()) is not _END:
            if isinstance(item, Raised):
                raise item.exc
            yield item
    finally:
        channel.close()


def chained(first: list[Any], events: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """The events ``until_output`` already read, then the rest."""
    return _Chained(first, events)


class _Chained:
    """:func:`chained`'s iterator. Not an async generator: once ``first`` is used up,
    ``__anext__`` is the stream's own, so a relayed chunk passes through no frame of ours.
    Closing it does not close ``events``, which stay the turn's to close.
    """

    __slots__ = ("_events", "_first")

    def __init__(self, first: list[Any], events: AsyncIterator[Any]) -> None:
        self._first = list(first)
        self._events = events

    def __aiter__(self) -> _Chained:
        return self

    def __anext__(self) -> Awaitable[Any]:
        if self._first:
            return _ready(self._first.pop(0))
        return self._events.__anext__()

    async def aclose(self) -> None:
        self._first = []


async def _ready(value: Any) -> Any:
    return value


def merged(streams: Sequence[AsyncIterator[Any]]) -> AsyncIterator[tuple[int, Any]]:
    """The items of several streams as they come, each with the index of its stream.

    A single stream needs none of this: its reader takes the stream as it is (see
    the facades' runner), with no step of ours per item.
    """
    return _merged(streams)


async def _merged(streams: Sequence[AsyncIterator[Any]]) -> AsyncIterator[tuple[int, Any]]:
    # bounded: a client that stops reading holds the choices' streams, and so the upstream, where they are
    queue: asyncio.Queue[tuple[int, Any]] = asyncio.Queue(maxsize=UNREAD * len(streams))

    async def pump(index: int, stream: AsyncIterator[Any]) -> None:
        try:
            async for item in stream:
                await queue.put((index, item))
        except Exception as exc:  # noqa: BLE001 - handed to the reader, who raises it
            await queue.put((index, exc))
        finally:
            await queue.put((index, _END))

    tasks = [asyncio.ensure_future(pump(i, s)) for i, s in enumerate(streams)]
    try:
        left = len(tasks)
        while left:
            index, item = await queue.get()
            if item is _END:
                left -= 1
            elif isinstance(item, Exception):
                raise item
            else:
                yield index, item
    finally:
        for task in tasks:
            task.cancel()
