"""``Relay``: frames that are ready at once go out as one message; waiting, failing and stopping stay as they were.

The relay is the streamed response's own loop: it sends each batch with the ``send`` it is
given and owns the stream's end (``cut_short`` on a cancel, then ``end(finished)``). These
tests give it a recording ``send``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agent_core.server.http.event_stream import WHOLE_BATCH
from agent_core.server.http.ready import MAX_BYTES, MAX_FRAMES, Relay


class Ends:
    """What the relay reported of the stream's end, and every part it sent."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.cut = 0
        self.ended: list[bool] = []

    async def send(self, message: dict[str, Any]) -> None:
        assert message["type"] == "http.response.body" and message["more_body"] and message[WHOLE_BATCH]
        self.parts.append(message["body"])

    async def end(self, finished: bool) -> None:
        self.ended.append(finished)

    def relay(self, frames: AsyncIterator[bytes], last: bytes = b"") -> Relay:
        def cut_short() -> None:
            self.cut += 1

        return Relay(frames, lambda frame: frame == last, cut_short, self.end)


async def _collect(frames: AsyncIterator[bytes]) -> list[bytes]:
    ends = Ends()
    await ends.relay(frames).send_all(ends.send)
    return ends.parts


def test_frames_ready_at_once_are_one_message_and_a_wait_sends_what_is_ready_first() -> None:
    async def main() -> list[bytes]:
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

    assert asyncio.run(main()) == [b"ab", b"c", b"de"]


def test_the_end_says_whether_the_last_frame_went_out_and_the_frames_are_closed() -> None:
    closed: list[bool] = []

    async def frames() -> AsyncIterator[bytes]:
        try:
            yield b"a"
            await asyncio.sleep(0)
            yield b"[DONE]"
        finally:
            closed.append(True)

    async def main(last: bytes) -> Ends:
        ends = Ends()
        await ends.relay(frames(), last).send_all(ends.send)
        return ends

    done = asyncio.run(main(b"[DONE]"))
    assert (done.parts, done.ended, done.cut) == ([b"a", b"[DONE]"], [True], 0)
    other = asyncio.run(main(b"never sent"))
    assert (other.ended, other.cut) == ([False], 0)
    assert closed == [True, True]


def test_what_was_ready_goes_out_before_a_failure() -> None:
    async def frames() -> AsyncIterator[bytes]:
        yield b"a"
        yield b"b"
        raise ValueError("upstream broke")

    async def main() -> Ends:
        ends = Ends()
        with pytest.raises(ValueError, match="upstream broke"):
            await ends.relay(frames()).send_all(ends.send)
        return ends

    ends = asyncio.run(main())
    assert (ends.parts, ends.ended) == ([b"ab"], [False])


def test_a_failure_after_a_wait_is_raised_where_the_wait_was() -> None:
    async def frames() -> AsyncIterator[bytes]:
        yield b"a"
        await asyncio.sleep(0.001)
        raise ValueError("late")

    async def main() -> list[bytes]:
        ends = Ends()
        with pytest.raises(ValueError, match="late"):
            await ends.relay(frames()).send_all(ends.send)
        return ends.parts

    assert asyncio.run(main()) == [b"a"]


def test_batches_are_capped_in_frames_and_in_bytes() -> None:
    async def many() -> AsyncIterator[bytes]:
        for _ in range(MAX_FRAMES + 10):
            yield b"x"

    async def big() -> AsyncIterator[bytes]:
        for _ in range(5):
            yield b"y" * (MAX_BYTES // 2)

    assert [len(p) for p in asyncio.run(_collect(many()))] == [MAX_FRAMES, 10]
    assert [len(p) // (MAX_BYTES // 2) for p in asyncio.run(_collect(big()))] == [2, 2, 1]


def test_a_send_that_fails_while_a_frame_is_awaited_unwinds_the_generator_as_a_cancel_would() -> None:
    """The client is gone between a batch and the next frame's wait: the frame generator gets a cancel,
    runs its ``finally`` (which may await), and is closed (it is not left running)."""
    seen: list[str] = []

    async def main() -> Ends:
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

        ends = Ends()

        async def gone(message: dict[str, Any]) -> None:
            await ends.send(message)
            if message["body"] == b"a":  # the generator is parked on `never`, its step taken by hand
                raise ConnectionResetError("the client is gone")

        with pytest.raises(ConnectionResetError):
            await ends.relay(frames()).send_all(gone)
        return ends

    ends = asyncio.run(main())
    assert seen == ["cancelled", "finally"]
    assert (ends.parts, ends.ended, ends.cut) == ([b"a"], [False], 0)


@pytest.mark.parametrize("earlier_wait", [False, True], ids=["in-the-first-wait", "in-a-later-wait"])
def test_a_cancel_while_waiting_reaches_the_frame_generator_and_cuts_the_stream_short(earlier_wait: bool) -> None:
    """A cancel reaches the step in its first wait (resumed by hand) and in a later one (under ``yield from``)."""
    seen: list[str] = []

    async def main() -> Ends:
        started = asyncio.Event()
        ends = Ends()

        async def frames() -> AsyncIterator[bytes]:
            try:
                yield b"a"
                if earlier_wait:
                    await asyncio.sleep(0)  # the wait the relay resumes by hand; the next one is later
                started.set()
                await asyncio.sleep(30)
                yield b"late"
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise

        task = asyncio.create_task(ends.relay(frames()).send_all(ends.send))
        await started.wait()
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return ends

    ends = asyncio.run(main())
    assert seen == ["cancelled"]
    assert (ends.parts, ends.cut, ends.ended) == ([b"a"], 1, [False])


def test_a_frame_that_takes_a_timeout_inside_the_generator_still_works() -> None:
    """asyncio.timeout inside the generator cancels the task and uncancels it: the same task runs the step."""

    async def frames() -> AsyncIterator[bytes]:
        yield b"a"
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(5)
        except TimeoutError:
            yield b"timed out"

    assert asyncio.run(_collect(frames())) == [b"a", b"timed out"]


@pytest.mark.parametrize("takes", [True, False])
def test_each_batch_is_offered_to_the_connections_write_first_and_sent_only_when_refused(takes: bool) -> None:
    async def main() -> tuple[list[bytes], list[bytes], list[bool]]:
        async def frames() -> AsyncIterator[bytes]:
            yield b"a"
            yield b"b"
            await asyncio.sleep(0)
            yield b"c"
            raise RuntimeError("the upstream broke")  # what was ready still goes out first, the same way

        written: list[bytes] = []

        def write(body: bytes) -> bool:
            written.append(body)
            return takes

        ends = Ends()
        with pytest.raises(RuntimeError):
            await ends.relay(frames(), b"c").send_all(ends.send, write)
        return written, ends.parts, ends.ended

    written, sent, ended = asyncio.run(main())
    assert written == [b"ab", b"c"]  # every batch offered to write
    assert sent == ([] if takes else [b"ab", b"c"])  # and sent only when write refused it
    assert ended == [True]  # the last frame went out either way


def test_a_step_that_waits_several_times_gives_its_frames_in_order() -> None:
    """Later waits of a step, a timeout's cancel and uncancel among them, go to the task directly."""

    async def frames() -> AsyncIterator[bytes]:
        for i in range(3):
            await asyncio.sleep(0)
            try:
                async with asyncio.timeout(0.01):
                    await asyncio.sleep(5)
            except TimeoutError:
                yield b"%d" % i

    assert asyncio.run(_collect(frames())) == [b"0", b"1", b"2"]


def test_a_frame_after_a_wait_comes_back_through_yield_from_not_a_send_call() -> None:
    """After a wait the step is resumed by ``yield from``, whose value CPython takes in C.

    Calling ``step.send(None)`` from Python instead raises each frame as a StopIteration that
    _resume catches: a traceback and a match per paced chunk.
    """
    import sys

    from agent_core.server.http import ready

    sends: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "c_call" and frame.f_code is ready._resume.__code__:
            sends.append(arg.__name__)

    async def frames() -> AsyncIterator[bytes]:
        for i in range(5):
            await asyncio.sleep(0.001)
            yield b"%d" % i

    async def main() -> list[bytes]:
        sys.setprofile(profile)
        try:
            return await _collect(frames())
        finally:
            sys.setprofile(None)

    assert asyncio.run(main()) == [b"0", b"1", b"2", b"3", b"4"]
    assert sends == []
