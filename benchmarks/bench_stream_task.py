"""A streamed body in a task of its own, against the body in the request's task: CPU a paced chunk.

    .venv/bin/python benchmarks/bench_stream_task.py                  # 10, 100 and 400 streams, 10 rounds
    .venv/bin/python benchmarks/bench_stream_task.py --streams 100 --rounds 6
    .venv/bin/python benchmarks/bench_stream_task.py --quick          # a smoke run
    .venv/bin/python benchmarks/bench_stream_task.py --instructions 400  # instructions a paced chunk, callgrind

Measured tree against tree, a change of a tenth a paced chunk is lost in this machine's noise
(the same tree's figure moves by more between two minutes). So this runs both ways in one
process, on one app and one upstream, switching ``EventStreamResponse.__call__`` between the
two round by round (the order alternating), and prints the medians, the minimums and in how
many rounds the task of its own came out lower. ``--instructions N`` counts instead, under
callgrind, the instructions a paced chunk of one stream each way (N + 10 tokens less 10, over
N): a figure a busy machine does not move, for changes smaller than the rounds can show. Each round is ``bench_setup.py``'s paced
measure: N streams of 108 tokens less N of 8, per extra chunk, the upstream pausing 20 ms
between tokens (see ``docs/performance.md``, "Measuring a change").
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_setup import _app, _app_call, _upstream, cpu_per_chunk


async def _in_the_requests_task(self: Any, scope: Any, receive: Any, send: Any) -> None:
    """``EventStreamResponse.__call__`` as it was: the body in the task that called the app."""
    from agent_core.server.http.event_stream import BODY_SEND

    extensions = scope.get("extensions")
    self._body_send = extensions.get(BODY_SEND) if extensions else None
    await self.stream_response(send)


async def alternate(one: Callable[[int], Awaitable[Any]], counts: list[int], rounds: int,
                    ways: dict[str, Callable[[], None]]) -> None:
    """For each count, CPU a paced chunk of two ways, switched round by round (the order alternating).

    ``ways`` maps each way's name to what switches to it, the first way first; it is switched
    back to at the end. Prints a row per count: both medians and minimums, and in how many
    rounds the first way came out lower.
    """
    first, second = ways
    for n in counts:
        await asyncio.gather(*(one(8) for _ in range(n)))  # warm-up
        figures: dict[str, list[float]] = {name: [] for name in ways}
        for r in range(rounds):
            for name in (first, second) if r % 2 == 0 else (second, first):
                ways[name]()
                figures[name].append(await cpu_per_chunk(one, n))
        ways[first]()
        a, b = figures[first], figures[second]
        lower = sum(x < y for x, y in zip(a, b))
        print(f"{n:>4} streams, {rounds} rounds: {first} median {statistics.median(a):7.1f} us "
              f"(min {min(a):7.1f}), {second} median {statistics.median(b):7.1f} us "
              f"(min {min(b):7.1f}); {first} lower in {lower} of {rounds}", flush=True)


def run_loop(run: Callable[[], Awaitable[None]]) -> None:
    """Run ``run()`` on uvloop when installed, as ``agent-core serve`` would."""
    try:
        import uvloop

        uvloop.run(run())
    except ImportError:
        asyncio.run(run())


def ab_args(doc: str | None, argv: list[str] | None) -> tuple[argparse.Namespace, list[int]]:
    """The command line of a benchmark that runs two ways round by round: its arguments, and the counts of streams."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    parser.add_argument("--streams", default="10,100,400", help="comma-separated counts of streams at once")
    parser.add_argument("--rounds", type=int, default=10, help="rounds of each way (median shown)")
    parser.add_argument("--pace-ms", type=float, default=20.0)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 and 4 streams, 2 rounds, 1 ms pacing")
    parser.add_argument("--instructions", type=int, metavar="N",
                        help="instead, count each way's instructions a paced chunk under callgrind (valgrind): "
                             "one stream of N + 10 tokens less one of 10, over N; the same figure on a busy machine")
    parser.add_argument("--one-stream", metavar="WAY", help=argparse.SUPPRESS)  # what callgrind runs
    parser.add_argument("--tokens", type=int, default=10, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.streams, args.rounds, args.pace_ms = "2,4", 2, 1.0
    return args, [int(n) for n in args.streams.split(",")]


def ab_modes(script: str, args: argparse.Namespace, ways: dict[str, Callable[[], None]],
             make_one: Callable[[str], Callable[[int], Awaitable[Any]]]) -> bool:
    """Run ``--one-stream`` or ``--instructions`` when asked (True), else nothing (False).

    ``--one-stream WAY``: switched to WAY, one stream of 2 tokens, then one of ``--tokens``,
    through ``make_one(url)``. ``--instructions N``: that run under callgrind for each way, with
    N + 10 tokens and with 10; the difference over N is a paced chunk's instructions, start-up
    cancelled out (hash seed fixed, so two runs count alike).
    """
    if args.one_stream:
        if args.one_stream not in ways:
            raise SystemExit(f"--one-stream: no way {args.one_stream!r} here; the ways: {', '.join(ways)}")
        ways[args.one_stream]()
        with _upstream(args.pace_ms) as url:
            one = make_one(url)

            async def run() -> None:
                await one(2)
                await one(args.tokens)

            run_loop(run)
        return True
    if args.instructions:
        for name in ways:
            short, long = (_callgrind(script, name, tokens, args.pace_ms) for tokens in (10, args.instructions + 10))
            print(f"{name}: {(long - short) / args.instructions:,.0f} instructions a paced chunk", flush=True)
        return True
    return False


def _callgrind(script: str, way: str, tokens: int, pace_ms: float) -> int:
    run = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, script,
                          "--one-stream", way, "--tokens", str(tokens), "--pace-ms", str(pace_ms)],
                         capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"}, check=False)
    found = re.search(r"Collected : (\d+)", run.stderr)
    if run.returncode != 0 or found is None:
        raise SystemExit(f"callgrind run of {way!r} failed: {run.stderr[-800:]}")
    return int(found.group(1))


def ab_on_app(script: str, args: argparse.Namespace, counts: list[int], owner: Any, attr: str,
              ways: dict[str, Any]) -> None:
    """The two ways on the app ``agent-core serve`` builds, each a value of ``owner.attr`` (the first kept after).

    Round by round (:func:`alternate`), or as ``--one-stream`` / ``--instructions`` ask (:func:`ab_modes`).
    """

    def switch(way: Any) -> Callable[[], None]:
        return lambda: setattr(owner, attr, way)

    switches = {name: switch(w) for name, w in ways.items()}

    def on_app(url: str) -> Callable[[int], Awaitable[Any]]:
        return _app_call(_app(url), "openai/paced", stream=True)

    try:
        if ab_modes(script, args, switches, on_app):
            return
        with _upstream(args.pace_ms) as url:
            one = on_app(url)
            run_loop(lambda: alternate(one, counts, args.rounds, switches))
    finally:
        setattr(owner, attr, next(iter(ways.values())))


def main(argv: list[str] | None = None) -> int:
    args, counts = ab_args(__doc__, argv)
    from agent_core.server.http.event_stream import EventStreamResponse

    ab_on_app(__file__, args, counts, EventStreamResponse, "__call__",
              {"own task": EventStreamResponse.__call__, "request's task": _in_the_requests_task})
    return 0


if __name__ == "__main__":
    sys.exit(main())
