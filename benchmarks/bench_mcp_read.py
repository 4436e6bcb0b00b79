"""MCP: how fast one large message is read from a server, by the SDK's stdio client and by ours.

The ``big`` tool of ``tests/toolkit/mcp_stdio_server.py`` (and of
``mcp_http_server.py``) answers with a text of N MB, as text only, so the
message is about N MB.
For each size this prints the median seconds of a ``call_tool`` on an open
connection through:

* ``sdk stdio``: the official SDK's ``stdio_client``;
* ``our stdio``: :func:`agent_core_plugins.mcp_transports.stdio_transport`,
  which the ``mcp`` tool plugin uses;
* ``http``: the SDK's streamable-HTTP client over the ``httpx2`` client the
  plugin hands it (:func:`agent_core_plugins.mcp_transports.http_client`);

and the message's MB per second through each. The SDK's stdio client is
left out above ``--sdk-max`` MB: its time grows with the square of
the message's size.

Run: ``.venv/bin/python benchmarks/bench_mcp_read.py [--sizes 2,8,16,50] [--rounds 3]``
(``--quick``: 0.5 and 1 MB, one round). The figures are quoted in
``docs/performance.md`` (section "MCP tools").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from agent_core_plugins.mcp_servers import ServerSpec, parse_servers
from agent_core_plugins.mcp_transports import http_client, stdio_transport
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from bench_mcp import http_server  # the same server, started the same way

ROOT = Path(__file__).resolve().parent.parent
SERVERS = ROOT / "tests" / "toolkit"
CAP = 1 << 30  # no cap here: the read itself is measured


def _never(size: int) -> None:
    raise AssertionError(f"a {size}-byte message passed the benchmark's cap")


async def _median_s(transport: Any, megabytes: float, rounds: int) -> tuple[float, int]:
    """Median seconds of ``big(megabytes)`` over ``rounds`` calls, and the message's size in bytes."""
    async with Client(transport, cache=None) as client:
        times, size = [], 0
        for _ in range(rounds):
            start = time.perf_counter()
            result = await client.call_tool("big", {"megabytes": megabytes})
            times.append(time.perf_counter() - start)
            text = result.content[0].text  # type: ignore[union-attr]
            assert len(text) == int(megabytes * 1_000_000), "the answer came back short"
            size = len(text)
        return statistics.median(times), size


async def main(sizes: list[float], rounds: int, sdk_max: float) -> None:
    stdio = ServerSpec(name="st", command=sys.executable, args=(str(SERVERS / "mcp_stdio_server.py"),))
    proc, entry = http_server()
    (web,) = parse_servers([entry])
    print("| message MB | sdk stdio s | our stdio s | http s | sdk stdio MB/s | our stdio MB/s | http MB/s |")
    print("|---|---|---|---|---|---|---|")
    try:
        for mb in sizes:
            sdk = None
            if mb <= sdk_max:
                params = StdioServerParameters(command=sys.executable, args=list(stdio.args))
                sdk, size = await _median_s(stdio_client(params), mb, rounds)
            ours, size = await _median_s(stdio_transport(stdio, CAP, _never), mb, rounds)
            http, size = await _median_s(streamable_http_client(web.url or "", http_client=http_client(web, CAP, _never),
                                                                max_sse_event_size=None), mb, rounds)

            def cell(s: float | None) -> str:
                return "-" if s is None else f"{s:.3f}"

            def rate(s: float | None, size: int = size) -> str:
                return "-" if s is None else f"{size / s / 1e6:.0f}"

            print(f"| {mb:g} | {cell(sdk)} | {cell(ours)} | {cell(http)} | {rate(sdk)} | "
                  f"{rate(ours)} | {rate(http)} |", flush=True)
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="2,8,16,50", help="MB per answer, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sdk-max", type=float, default=16.0, help="largest answer (MB) read by the SDK's stdio client")
    parser.add_argument("--quick", action="store_true", help="0.5 and 1 MB, one round (the smoke test)")
    args = parser.parse_args()
    chosen = [0.5, 1.0] if args.quick else [float(x) for x in args.sizes.split(",")]
    anyio.run(main, chosen, 1 if args.quick else args.rounds, args.sdk_max)
