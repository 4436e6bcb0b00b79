"""``ready_together``: frames that are ready at once go out as one message; waiting, failing and stopping stay as they were."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing

import pytest
from agent_core.server.ready import MAX_BYTES, MAX_FRAMES, ready_together


async def _collect(frames: AsyncIterator[bytes]) -> list[list[bytes]]:
    return [batch async for batch in ready_together(frames)]


def test_frames_ready_at_once_are_one_batch_and_a_wait_sends_what_is_ready_first() -> None:
    async def main() -> list[list[bytes]]:
        gate = asyncio.get_running_loop().create_future()

        async def frames() -> AsyncIterator[bytes]:
            yield b"a"
            yield b"b"
            await asyncio.sleep(0)  # one loop turn
            yield b"c"
            asyncio.get_running_loop().call_later(0.01, gate.set_result, None)
            await gate  # a real wait on a future
            yield b"d"
            yield b"e"

        return await _collect(frames())

    assert asyncio.run(main()) == [[b"a", b"b"], [b"c"], [b"d", b"e"]]


def test_what_was_ready_goes_out_before_a_failure() -> None:
    async def frames() -> AsyncIterator[bytes]:
        yield b"a"
        yield b"b"
        raise ValueError("upstream broke")

    async def main() -> list[list[bytes]]:
        seen: list[list[bytes]] = []
        with pytest.raises(ValueError, match="upstream broke"):
            async for batch in ready_together(frames()):
                seen.append(batch)
        return seen

    assert asyncio.run(main()) == [[b"a", b"b"]]


def test_a_failure_after_a_wait_is_raised_where_the_wait_was() -> None:
    async def frames() -> AsyncIterator[bytes]:
        yield b"a"
        await asyncio.sleep(0.001)
        raise ValueError("late")

    async def main() -> list[list[bytes]]:
        seen: list[list[bytes]] = []
        with pytest.raises(ValueError, match="late"):
            async for batch in ready_together(frames()):
                seen.append(batch)
        return seen

    assert asyncio.run(main()) == [[b"a"]]


def test_batches_are_capped_in_frames_and_in_bytes() -> None:
    async def many() -> AsyncIterator[bytes]:
        for _ in range(MAX_FRAMES + 10):
            yield b"x"

    async def big() -> AsyncIterator[bytes]:
        for _ in range(5):
            yield b"y" * (MAX_BYTES // 2)

    assert [len(b) for b in asyncio.run(_collect(many()))] == [MAX_FRAMES, 10]
    assert [len(b) for b in asyncio.run(_collect(big()))] == [2, 2, 1]


def test_closing_while_a_frame_is_awaited_unwinds_the_generator_as_a_cancel_would() -> None:
    """The consumer stops between a batch and its wait: the frame generator gets a cancel, runs its
    ``finally`` (which may await), and can be closed afterwards (it is not left running)."""
    seen: list[str] = []

    async def main() -> None:
        never = asyncio.get_running_loop().create_future()

        async def frames() -> AsyncIterator[bytes]:
            try:
                yield b"a"
                await never
                yield b"unreachable"
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise
            finally:
                await asyncio.sleep(0)  # clean-up that awaits, as the engine's does
                seen.append("finally")

        gen = frames()
        async with aclosing(gen), aclosing(ready_together(gen)) as batches:
            assert await anext(batches) == [b"a"]
            # the generator is now parked on `never`, its step taken by hand; leaving the block
            # closes `batches` first, then `gen` (as the server's _stream_out does)

    asyncio.run(main())
    assert seen == ["cancelled", "finally"]


def test_a_cancel_while_waiting_reaches_the_frame_generator() -> None:
    seen: list[str] = []

    async def main() -> None:
        started = asyncio.Event()

        async def frames() -> AsyncIterator[bytes]:
            try:
                yield b"a"
                started.set()
                await asyncio.sleep(30)
                yield b"late"
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise

        async def consume() -> list[list[bytes]]:
            return await _collect(frames())

        task = asyncio.create_task(consume())
        await started.wait()
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert seen == ["cancelled"]


def test_a_frame_that_takes_a_timeout_inside_the_generator_still_works() -> None:
    """asyncio.timeout inside the generator cancels the task and uncancels it: the same task runs the step."""

    async def frames() -> AsyncIterator[bytes]:
        yield b"a"
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(5)
        except TimeoutError:
            yield b"timed out"

    assert asyncio.run(_collect(frames())) == [[b"a"], [b"timed out"]]
