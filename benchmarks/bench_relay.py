"""The facades' relay as one coroutine, against the two async generators it replaced: CPU a paced chunk.

    .venv/bin/python benchmarks/bench_relay.py                  # 10, 100 and 400 streams, 10 rounds
    .venv/bin/python benchmarks/bench_relay.py --streams 100 --rounds 6
    .venv/bin/python benchmarks/bench_relay.py --quick          # a smoke run
    .venv/bin/python benchmarks/bench_relay.py --instructions 400  # instructions a paced chunk, callgrind

A streamed facade response sends its frames with ``Relay.send_all``, awaited by the response:
one coroutine from the frame generator to the connection. Before, the response iterated an
async generator that owned the turn's end, around a second one that batched the frames that
were ready together; every paced chunk woke both, each with its ``asend`` object. This runs
both ways in one process on one app and one upstream, switching the facades' runner's ``_stream_out``
round by round (the order alternating), as ``bench_stream_task.py`` does; each figure is
``bench_setup.py``'s paced measure: N streams of 108 tokens less N of 8, per extra chunk, the
upstream pausing 20 ms between tokens. The generators are rebuilt here as they were (1b21a36),
without the failure and size-cap paths a paced stream never takes. ``--instructions N``
counts instead each way's instructions a paced chunk, under callgrind (see
``bench_stream_task.py``).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import aclosing
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_stream_task import ab_args, ab_on_app

MADE = {"relay": 0, "two generators": 0}  # streams each way made: a switch that never took stops the run


async def _batches(frames: AsyncIterator[bytes]) -> AsyncIterator[list[bytes]]:
    """``ready_together`` as it was: the frames that were ready together, stepped by hand."""
    from agent_core.server.http.ready import _resume

    next_frame = frames.__anext__
    batch: list[bytes] = []
    while True:
        step = next_frame()
        try:
            waiting = step.send(None)  # type: ignore[attr-defined]
        except StopIteration as done:
            batch.append(done.value)
            continue
        except StopAsyncIteration:
            break
        if batch:
            yield batch
            batch = []
        try:
            frame = await _resume(step, waiting)
        except StopAsyncIteration:
            break
        batch.append(frame)
    if batch:
        yield batch


def _two_generators(state: Any, turns: Sequence[Any], frames: AsyncIterator[bytes], out: Any) -> AsyncIterator[bytes]:
    """The runner's ``_stream_out`` as it was: an async generator owning the turn's end, around the batching one."""
    from agent_core.server.facades.runner import abandon, release

    MADE["two generators"] += 1
    is_last: Callable[[bytes], bool] = out.is_last

    async def out() -> AsyncIterator[bytes]:
        finished = False
        try:
            async with aclosing(frames), aclosing(_batches(frames)) as batches:
                async for batch in batches:
                    finished = is_last(batch[-1])
                    yield batch[0] if len(batch) == 1 else b"".join(batch)
        finally:
            if not finished:
                await abandon(state, turns)
            else:
                for turn in turns:
                    release(state, turn)
                    await turn.events.aclose()

    return out()


def main(argv: list[str] | None = None) -> int:
    args, counts = ab_args(__doc__, argv)
    from agent_core.server.facades import runner

    relay = runner._stream_out

    def counted_relay(*a: Any) -> Any:
        MADE["relay"] += 1
        return relay(*a)

    ab_on_app(__file__, args, counts, runner, "_stream_out",
              {"relay": counted_relay, "two generators": _two_generators})
    runner._stream_out = relay  # type: ignore[assignment]
    if args.instructions:
        return 0
    if args.one_stream:
        MADE.update({way: 1 for way in MADE if way != args.one_stream})  # only the one asked for runs
    if not all(MADE.values()):
        raise SystemExit(f"a way never ran: streams made {MADE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
