"""A streamed body in a task of its own, against the body in the request's task: CPU a paced chunk.

    .venv/bin/python benchmarks/bench_stream_task.py                  # 10, 100 and 400 streams, 10 rounds
    .venv/bin/python benchmarks/bench_stream_task.py --streams 100 --rounds 6
    .venv/bin/python benchmarks/bench_stream_task.py --quick          # a smoke run

Measured tree against tree, a change of a tenth a paced chunk is lost in this machine's noise
(the same tree's figure moves by more between two minutes). So this runs both ways in one
process, on one app and one upstream, switching ``EventStreamResponse.__call__`` between the
two round by round (the order alternating), and prints the medians, the minimums and in how
many rounds the task of its own came out lower. Each round is ``bench_setup.py``'s paced
measure: N streams of 108 tokens less N of 8, per extra chunk, the upstream pausing 20 ms
between tokens (see ``docs/performance.md``, "A stream's body in a task of its own").
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_setup import _app, _app_call, _upstream, cpu_per_chunk


async def _in_the_requests_task(self: Any, scope: Any, receive: Any, send: Any) -> None:
    """``EventStreamResponse.__call__`` as it was: the body in the task that called the app."""
    from agent_core.server.event_stream import BODY_SEND

    extensions = scope.get("extensions")
    self._body_send = extensions.get(BODY_SEND) if extensions else None
    await self.stream_response(send)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--streams", default="10,100,400", help="comma-separated counts of streams at once")
    parser.add_argument("--rounds", type=int, default=10, help="rounds of each way (median shown)")
    parser.add_argument("--pace-ms", type=float, default=20.0)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 and 4 streams, 2 rounds, 1 ms pacing")
    args = parser.parse_args(argv)
    if args.quick:
        args.streams, args.rounds, args.pace_ms = "2,4", 2, 1.0
    counts = [int(n) for n in args.streams.split(",")]
    from agent_core.server.event_stream import EventStreamResponse

    ways = {"own task": EventStreamResponse.__call__, "request's task": _in_the_requests_task}
    with _upstream(args.pace_ms) as url:
        one = _app_call(_app(url), "openai/paced", stream=True)

        async def run() -> None:
            for n in counts:
                await asyncio.gather(*(one(8) for _ in range(n)))  # warm-up
                figures: dict[str, list[float]] = {name: [] for name in ways}
                for r in range(args.rounds):
                    order = list(ways) if r % 2 == 0 else list(reversed(ways))
                    for name in order:
                        EventStreamResponse.__call__ = ways[name]  # type: ignore[method-assign]
                        figures[name].append(await cpu_per_chunk(one, n))
                EventStreamResponse.__call__ = ways["own task"]  # type: ignore[method-assign]
                own, old = figures["own task"], figures["request's task"]
                lower = sum(a < b for a, b in zip(own, old))
                print(f"{n:>4} streams, {args.rounds} rounds: own task median {statistics.median(own):7.1f} us "
                      f"(min {min(own):7.1f}), request's task median {statistics.median(old):7.1f} us "
                      f"(min {min(old):7.1f}); own task lower in {lower} of {args.rounds}", flush=True)

        try:
            import uvloop

            uvloop.run(run())
        except ImportError:
            asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
