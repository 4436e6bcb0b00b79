"""A flow handed out as a FlowStream: the same events read with ``async for`` or pumped inline by the driver.

The provider's async stream is a ``FlowStream``; the engine's driver runs its body's reads
and both steps in one loop. These tests hold the two ways of reading it to the same events,
and to the same end: the flow's context left once, whatever ends the stream (its end, a
failed read, the outer step's error, a consumer that drops it half read).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Generator
from typing import Any

import pytest
from agent_core.plugin_kit import Call, FlowStream, OpenIter, Pump, drive_async
from agent_core.runtime.effects import NextItem


class Context:
    """The flow's context (a provider's exchange): entered, then left once."""

    def __init__(self) -> None:
        self.entered = self.left = 0

    async def __aenter__(self) -> Context:
        self.entered += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.left += 1


class Body:
    """A body read part by part, which may fail at one part, and notes whether it was closed."""

    def __init__(self, parts: list[bytes], fail_at: int | None = None) -> None:
        self.parts, self.fail_at, self.closed = parts, fail_at, False

    async def read(self) -> AsyncIterator[bytes]:
        try:
            for i, part in enumerate(self.parts):
                await asyncio.sleep(0)
                if i == self.fail_at:
                    raise ConnectionError(f"cut at part {i}")
                yield part
        finally:
            self.closed = True


def inner_flow(body: Body, trail: list[str]) -> Generator[Any, Any, None]:
    """A provider's streamed call in small: an effect, events, a pump over the body, an event after it."""
    yield "start"
    answer = yield Call(None, _answer, "an effect")
    trail.append(answer)
    handle = yield OpenIter(None, body.read, "the body")
    try:
        yield Pump(handle, lambda raw: [f"ev:{raw.decode()}"] if raw != b"skip" else [])
    except ConnectionError as exc:
        yield f"heard: {exc}"
    yield "end"


async def _answer() -> str:
    await asyncio.sleep(0)
    return "performed"


def streamed(body: Body, trail: list[str], context: Context) -> FlowStream:
    def start() -> tuple[Generator[Any, Any, None], Context]:
        trail.append("started")
        return inner_flow(body, trail), context

    return FlowStream(start)


def outer_flow(stream: FlowStream, first_by_hand: bool, step: Any = None) -> Generator[Any, Any, None]:
    """The engine's side: open the stream, maybe take its first item by hand, then pump it."""
    handle = yield OpenIter(None, lambda: stream)
    if first_by_hand:
        first = yield NextItem(handle)
        yield f"first {first}"
    try:
        yield Pump(handle, step or (lambda ev: (f"out({ev})",)))
    except Exception as exc:  # noqa: BLE001 - what the engine would blame on the provider
        yield f"outer heard {type(exc).__name__}: {exc}"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


PARTS = [b"a", b"skip", b"b", b"c"]
EVENTS = ["start", "ev:a", "ev:b", "ev:c", "end"]


def test_read_with_async_for_it_gives_the_flows_events_and_leaves_its_context_once() -> None:
    trail: list[str] = []
    context, body = Context(), Body(PARTS)

    async def main() -> list[Any]:
        stream = streamed(body, trail, context)
        assert trail == [] and context.entered == 0  # made, not read: nothing is opened
        return [ev async for ev in stream]

    assert run(main()) == EVENTS
    assert trail == ["started", "performed"]
    assert (context.entered, context.left, body.closed) == (1, 1, True)


@pytest.mark.parametrize("first_by_hand", [False, True], ids=["pumped", "first item by hand"])
def test_pumped_by_the_driver_it_gives_the_same_events(first_by_hand: bool) -> None:
    trail: list[str] = []
    context, body = Context(), Body(PARTS)

    async def main() -> list[Any]:
        return [ev async for ev in drive_async(outer_flow(streamed(body, trail, context), first_by_hand))]

    got = run(main())
    if first_by_hand:
        assert got == ["first start", *(f"out({e})" for e in EVENTS[1:])]
    else:
        assert got == [f"out({e})" for e in EVENTS]
    assert (context.entered, context.left, body.closed) == (1, 1, True)


@pytest.mark.parametrize("way", ["async for", "pumped"])
def test_a_failed_read_is_heard_by_the_inner_flow_at_its_pump(way: str) -> None:
    trail: list[str] = []
    context, body = Context(), Body(PARTS, fail_at=2)

    async def main() -> list[Any]:
        stream = streamed(body, trail, context)
        if way == "async for":
            return [ev async for ev in stream]
        return [ev async for ev in drive_async(outer_flow(stream, False, step=lambda ev: (ev,)))]

    assert run(main()) == ["start", "ev:a", "heard: cut at part 2", "end"]
    assert (context.left, body.closed) == (1, True)


def test_the_outer_steps_error_closes_the_body_and_the_context_and_reaches_the_outer_flow() -> None:
    trail: list[str] = []
    context, body = Context(), Body(PARTS)

    def step(ev: Any) -> Any:
        if ev == "ev:b":
            raise ValueError("a plugin refused b")
        return (ev,)

    async def main() -> list[Any]:
        return [ev async for ev in drive_async(outer_flow(streamed(body, trail, context), False, step=step))]

    assert run(main()) == ["start", "ev:a", "outer heard ValueError: a plugin refused b"]
    assert (context.entered, context.left, body.closed) == (1, 1, True)


def test_the_inner_flows_own_error_closes_it_and_reaches_the_outer_flow() -> None:
    context = Context()

    def failing() -> Generator[Any, Any, None]:
        yield "start"
        raise LookupError("the API said no")

    async def main() -> list[Any]:
        stream = FlowStream(lambda: (failing(), context))
        return [ev async for ev in drive_async(outer_flow(stream, False, step=lambda ev: (ev,)))]

    assert run(main()) == ["start", "outer heard LookupError: the API said no"]
    assert (context.entered, context.left) == (1, 1)


def test_a_stream_dropped_half_read_is_closed_on_its_loop() -> None:
    trail: list[str] = []
    context, body = Context(), Body(PARTS)

    async def main() -> tuple[int, bool]:
        stream = streamed(body, trail, context)
        async for ev in stream:
            if ev == "ev:a":
                break
        del stream
        gc.collect()
        for _ in range(5):
            await asyncio.sleep(0)
        return context.left, body.closed

    assert run(main()) == (1, True)


def test_a_stream_made_and_dropped_unread_opens_nothing() -> None:
    trail: list[str] = []
    context = Context()

    async def main() -> None:
        streamed(Body(PARTS), trail, context)
        gc.collect()
        await asyncio.sleep(0)

    run(main())
    assert trail == [] and (context.entered, context.left) == (0, 0)


@pytest.mark.parametrize("way", ["async for", "pumped"])
def test_a_body_read_by_a_sync_iterator_is_read_on_a_worker_thread(way: str) -> None:
    """A flow whose body is a plain iterator (a sync client's): each read runs on a thread, the events are the same."""
    import threading

    threads: set[str] = set()

    def body() -> Any:
        for part in (b"a", b"b"):
            threads.add(threading.current_thread().name)
            yield part

    def flow() -> Generator[Any, Any, None]:
        handle = yield OpenIter(body, None, "a sync body")
        yield Pump(handle, lambda raw: [f"ev:{raw.decode()}"])
        yield "end"

    async def main() -> list[Any]:
        stream = FlowStream(lambda: (flow(), Context()))
        if way == "async for":
            return [ev async for ev in stream]
        return [ev async for ev in drive_async(outer_flow(stream, False, step=lambda ev: (ev,)))]

    assert run(main()) == ["ev:a", "ev:b", "end"]
    assert threading.main_thread().name not in threads
