"""The server's upstream transport, compared: our pooled lean connection against the alternatives.

    .venv/bin/python benchmarks/bench_transports.py                     # 1,50,200 paced streams, 3 rounds
    .venv/bin/python benchmarks/bench_transports.py --streams 50 --rounds 5
    .venv/bin/python benchmarks/bench_transports.py --quick             # a smoke run

The options for reading the upstream are measured here, not argued: httpx's own
connection pool (httpcore), HTTP/2 to the upstream, and a well-kept alternative async transport
(``httpx-aiohttp``) behind the same seam a user would inject a client through
(``OpenAIProvider.using(async_client=...)``). Each transport gets a worker process that builds
the app ``agent-core serve`` runs (as ``bench_setup.py`` does, on uvloop when installed) with
the ``openai`` provider sending through it, and calls it directly, so only the app's own CPU is
counted, not an HTTP server's or a client's:

- ``lean``: no client injected; the provider's shared pool (``_flat_pool.py``, ``_lean_conn.py``).
- ``httpx``: a stock ``httpx.AsyncClient`` (httpcore's pool, h11), its limits raised so that
  hundreds of streams do not queue for a connection.
- ``aiohttp``: ``httpx.AsyncClient(transport=httpx_aiohttp.AiohttpTransport(...))``, aiohttp's
  pool and its C response parser (run when ``httpx-aiohttp`` is installed).
- ``h2``: a stock ``httpx.AsyncClient(http1=False, http2=True)`` (HTTP/2 with prior knowledge,
  every stream on one connection) against an HTTP/2 twin of the upstream written on the ``h2``
  library (run when ``h2`` is installed).

For each, two figures, medians of ``--rounds``: the CPU of one paced chunk once the stream is
open (N streams of 108 tokens less N of 8, per extra chunk, the upstream pausing ``--pace-ms``
between tokens), and the CPU of one non-streamed request (8 tokens, one at a time). The HTTP/1.1
upstream is ``bench_gateway.py``'s; the HTTP/2 one sends the same bytes, a data frame per event.
None of these packages is a dependency: install them in the benchmark's environment
(``pip install httpx-aiohttp h2``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_gateway import _AFTER, _BEFORE, _chunk, _event, _whole, stop  # noqa: E402 - not a package
from bench_setup import _app, _app_call, _upstream, cpu_per_chunk  # noqa: E402

TRANSPORTS = ("lean", "httpx", "aiohttp", "h2")
_NEEDS = {"aiohttp": "httpx_aiohttp", "h2": "h2"}
_MANY = 4096  # connections a pool may open: as many as there are streams, so none waits for one


def available(name: str) -> bool:
    need = _NEEDS.get(name)
    return need is None or importlib.util.find_spec(need) is not None


# -- the HTTP/2 upstream (its own process) ------------------------------------------------------


def _unframed(chunked: bytes) -> bytes:
    """One SSE event out of ``bench_gateway``'s chunked framing."""
    return chunked.split(b"\r\n", 1)[1][:-2]


def h2_upstream(pace_ms: float) -> None:
    """Serve ``bench_gateway``'s answers over HTTP/2 (prior knowledge, plain TCP); print the port."""
    import h2.config
    import h2.connection
    import h2.events
    import h2.settings

    pace = pace_ms / 1000
    role = _unframed(_chunk({"role": "assistant", "content": ""}))

    class Connection(asyncio.Protocol):
        def connection_made(self, transport: Any) -> None:
            self.transport, self.bodies = transport, {}
            self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
            self.h2.initiate_connection()
            self.h2.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: _MANY})
            self.flush()

        def flush(self) -> None:
            data = self.h2.data_to_send()
            if data:
                self.transport.write(data)

        def data_received(self, data: bytes) -> None:
            for event in self.h2.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    self.bodies[event.stream_id] = bytearray()
                elif isinstance(event, h2.events.DataReceived):
                    self.bodies[event.stream_id] += event.data
                    self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    body = json.loads(bytes(self.bodies.pop(event.stream_id)) or b"{}")
                    asyncio.get_running_loop().create_task(self.answer(event.stream_id, body))
            self.flush()

        async def answer(self, sid: int, body: dict[str, Any]) -> None:
            tokens = int(body.get("max_tokens") or 16)
            if not body.get("stream"):
                whole = _whole(tokens)
                self.h2.send_headers(sid, [(":status", "200"), ("content-type", "application/json"),
                                           ("content-length", str(len(whole)))])
                self.h2.send_data(sid, whole, end_stream=True)
                self.flush()
                return
            self.h2.send_headers(sid, [(":status", "200"), ("content-type", "text/event-stream")])
            self.h2.send_data(sid, role + _BEFORE + b"zq0 " + _AFTER)
            self.flush()
            paced = "paced" in str(body.get("model"))
            for i in range(1, tokens):
                if paced:
                    await asyncio.sleep(pace)
                self.h2.send_data(sid, _BEFORE + b"zq%d " % i + _AFTER)
                self.flush()
            usage = {"prompt_tokens": 5, "completion_tokens": tokens, "total_tokens": tokens + 5}
            self.h2.send_data(sid, _unframed(_chunk({}, "stop")) + _unframed(_chunk({}, usage=usage))
                              + _unframed(_event(b"[DONE]")), end_stream=True)
            self.flush()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(Connection, "127.0.0.1", 0, backlog=4096)
        print(server.sockets[0].getsockname()[1], flush=True)
        await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes stdin

    asyncio.run(main())


@contextlib.contextmanager
def _h2_upstream(pace_ms: float) -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, __file__, "--h2-upstream", "--pace-ms", str(pace_ms)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    try:
        yield f"http://127.0.0.1:{int(proc.stdout.readline())}"
    finally:
        proc.stdin.close()
        stop(proc)


# -- a worker per transport ----------------------------------------------------------------------


def _client(name: str) -> Any:
    """The async client the provider is given (None: its own pool)."""
    import httpx

    limits = httpx.Limits(max_connections=_MANY, max_keepalive_connections=_MANY)
    if name == "httpx":
        return httpx.AsyncClient(limits=limits, timeout=60)
    if name == "aiohttp":
        from httpx_aiohttp import AiohttpTransport

        return httpx.AsyncClient(transport=AiohttpTransport(limits=limits), timeout=60)
    if name == "h2":
        return httpx.AsyncClient(http1=False, http2=True, limits=limits, timeout=60)
    return None


def worker(url: str, name: str, streams: list[int], rounds: int, requests: int) -> None:
    """Print, a JSON line per round: [streams, CPU a paced chunk, CPU a non-streamed request] in µs."""
    from agent_core import AgentCore
    from agent_core_providers.openai import OpenAIProvider

    client = _client(name)
    providers = [OpenAIProvider.using(async_client=client)] if client is not None else []
    app = _app(url, core=AgentCore.discover(providers=providers))
    paced, whole = _app_call(app, "openai/paced", stream=True), _app_call(app, "openai/full", stream=False)

    async def per_request() -> float:
        started = time.process_time()
        for _ in range(requests):
            await whole(8)
        return (time.process_time() - started) / requests * 1e6

    async def main() -> None:
        for _ in range(10):  # warm-up: imports, pools, recorded resolutions
            await whole(8)
        for n in streams:
            await asyncio.gather(*(paced(8) for _ in range(n)))
            for _ in range(rounds):
                print(json.dumps([n, await cpu_per_chunk(paced, n), await per_request()]), flush=True)
        if client is not None:
            await client.aclose()

    asyncio.run(main())


def run(args: argparse.Namespace) -> int:
    names = [t for t in args.transports if available(t)]
    skipped = [t for t in args.transports if t not in names]
    print(f"upstream pacing {args.pace_ms:g} ms; median of {args.rounds} rounds; the app called in-process"
          + (f"; not installed, skipped: {', '.join(skipped)}" if skipped else ""), flush=True)
    results: dict[str, dict[int, tuple[float, float]]] = {}
    with contextlib.ExitStack() as stack:
        h1 = stack.enter_context(_upstream(args.pace_ms))
        h2 = stack.enter_context(_h2_upstream(args.pace_ms)) if "h2" in names else ""
        for name in names:
            proc = subprocess.Popen(
                [sys.executable, __file__, "--worker", h2 if name == "h2" else h1, "--transport", name,
                 "--streams", ",".join(map(str, args.streams)), "--rounds", str(args.rounds),
                 "--requests", str(args.requests)],
                stdout=subprocess.PIPE, text=True)
            assert proc.stdout is not None
            rows: dict[int, list[tuple[float, float]]] = {}
            for line in proc.stdout:
                n, chunk, request = json.loads(line)
                rows.setdefault(n, []).append((chunk, request))
            if proc.wait() != 0:
                raise SystemExit(f"the {name} worker failed")
            results[name] = {n: (statistics.median(c for c, _ in r), statistics.median(q for _, q in r))
                             for n, r in rows.items()}
    base = results.get("lean")
    for n in args.streams:
        for name, by_n in results.items():
            chunk, request = by_n[n]
            rel = f" ({chunk / base[n][0]:4.2f}x lean, non-streamed {request / base[n][1]:4.2f}x)" if base else ""
            print(f"{n:>4} paced streams  {name:<8} {chunk:7.1f} us a paced chunk, "
                  f"non-streamed {request:6.0f} us a request{rel}", flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=lambda s: [int(x) for x in s.split(",")], default=[1, 50, 200])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pace-ms", type=float, default=20.0)
    parser.add_argument("--requests", type=int, default=200, help="non-streamed requests a round")
    parser.add_argument("--transports", type=lambda s: s.split(","), default=list(TRANSPORTS),
                        help=f"comma-separated, of {', '.join(TRANSPORTS)}")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 2 streams, one round, 1 ms pacing, 20 non-streamed requests")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--transport", help=argparse.SUPPRESS)
    parser.add_argument("--h2-upstream", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.h2_upstream:
        h2_upstream(args.pace_ms)
        return 0
    if args.worker:
        worker(args.worker, args.transport, args.streams, args.rounds, args.requests)
        return 0
    if args.quick:
        args.streams, args.rounds, args.pace_ms, args.requests = [2], 1, 1.0, 20
    unknown = set(args.transports) - set(TRANSPORTS)
    if unknown:
        parser.error(f"unknown transport(s): {', '.join(sorted(unknown))}")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
