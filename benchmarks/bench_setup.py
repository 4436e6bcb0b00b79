"""What one facade request costs the server before and around its chunks: the ASGI app called directly.

    .venv/bin/python benchmarks/bench_setup.py                         # this tree, both modes
    .venv/bin/python benchmarks/bench_setup.py --tree /tmp/before      # and another checkout, alternating
    .venv/bin/python benchmarks/bench_setup.py --quick                 # a smoke run
    .venv/bin/python benchmarks/bench_setup.py --paced 1,50            # a paced chunk against a bare read

The gateway benchmark (``bench_gateway.py``) measures from outside, with clients, an HTTP
server and the upstream sharing two cores; its per-request figures swing by a third from
run to run, which hides a change of a few percent. This one leaves the HTTP server and the
client out: a worker process per tree builds the app (``create_app``, as ``agent-core serve``
does, on uvloop when installed) and calls it with a prepared ``POST /v1/chat/completions``
(offering, as serve's connection does, to call back when the client hangs up, which none does,
its own ``send`` for a stream's middle parts, and a ``write`` that takes them),
the upstream being ``bench_gateway.py``'s (full speed, 8 tokens). It prints, per tree and
mode:

- Python calls per request (``sys.setprofile``, one request after the warm-up): a count
  that does not move with the machine's noise, so a cut of a few percent shows;
- CPU per request (``time.process_time`` over ``--requests``), min and median of
  ``--rounds`` rounds, the trees taking turns round by round.

``--paced N,...`` asks instead what one *paced* chunk costs once the request is set up, with
N streams at once and the upstream pausing ``--pace-ms`` between tokens (as a model does):
the CPU of N requests of 108 tokens less that of N requests of 8, per extra chunk. Beside it,
the same N streams read straight from the upstream by a bare asyncio protocol that only counts
the events: the floor that waking up for a network read costs on this machine, which the app
pays too. The gap between the two is what our read, parse, plugin chain, engine and frame cost
per chunk, and how much more they cost when each chunk arrives alone. Three more columns split
that gap (``docs/performance.md``, "What bounds the per-chunk target"):

- *in the read*: the chunk's work alone, done in the read callback of a bare protocol: the
  chunked framing, the provider's SSE reader, the engine's hot loop on the chain and state
  the app's own request prepared, the facade's text frame; no task, no await between;
- *in a woken task*: the same work in a task that each read wakes (one await a read);
- *the library*: ``AgentCore.astream_request`` on the same stream (the provider's and the
  engine's layers, no server).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_gateway import start_upstream, stop, tree_env  # noqa: E402 - the benchmarks folder is not a package


def _app(url: str, core: Any = None) -> Any:
    """The app ``agent-core serve`` would build against ``url`` (with ``core``'s plugins when given), on uvloop when installed."""
    os.environ["AGENT_CORE_HOME"] = tempfile.mkdtemp(prefix="bench-setup-")
    try:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    except ImportError:
        pass
    from agent_core.server import ServeSettings, create_app

    return create_app(core, token="k", config={"base_url": url + "/v1", "api_key": "k", "max_retries": 0,
                                         "provider": "openai"},
                      settings=ServeSettings(max_concurrent=4096))  # as bench_gateway.py serves it


_ON_HANGUP = "agent_core.on_hangup"  # agent_core.server.http.wire.ON_HANGUP; a tree without it ignores it
#: agent_core.server.http.event_stream.BODY_SEND: serve's connection takes a stream's middle parts by it,
#: past the middleware's send wrappers (a tree without it ignores it)
_BODY_SEND = "agent_core.body_send"
#: agent_core.server.http.event_stream.BODY_WRITE: serve's connection writes a middle part by it, with no
#: message and no await, when it can (a tree without it ignores it); the stand-in takes every part
_BODY_WRITE = "agent_core.body_write"


def _took(body: bytes) -> bool:
    return True


def _watch(on_gone: Any) -> Callable[[], None]:
    """A stand-in for what ``agent-core serve``'s connection offers: no client hangs up here."""
    return _stop


def _stop() -> None:
    pass


def _app_call(app: Any, model: str, *, stream: bool) -> Callable[[int], Awaitable[None]]:
    """An async function making one ``POST /v1/chat/completions`` of so many tokens, straight to ``app``."""

    requests: dict[int, tuple[bytes, list[tuple[bytes, bytes]]]] = {}  # made once: only the app is measured

    async def one(tokens: int) -> None:
        if tokens not in requests:
            body = json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}],
                               "max_tokens": tokens, "stream": stream}).encode()
            requests[tokens] = body, [(b"host", b"127.0.0.1"), (b"authorization", b"Bearer k"),
                                      (b"content-type", b"application/json"),
                                      (b"content-length", str(len(body)).encode())]
        body, headers = requests[tokens]
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                 "scheme": "http", "path": "/v1/chat/completions", "raw_path": b"/v1/chat/completions",
                 "query_string": b"", "root_path": "", "headers": headers, "client": ("127.0.0.1", 5555),
                 "server": ("127.0.0.1", 8000), "state": {}, "extensions": {_ON_HANGUP: _watch}}
        sent, done, status = False, asyncio.Event(), []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            elif not message.get("more_body"):
                done.set()

        scope["extensions"][_BODY_SEND] = send
        scope["extensions"][_BODY_WRITE] = _took
        await app(scope, receive, send)
        if status != [200]:
            raise SystemExit(f"the app answered {status}")

    return one


def worker(url: str, mode: str, requests: int) -> None:
    """Build the app against ``url``; print the call count, then the CPU per request of each round asked for."""
    one = functools.partial(_app_call(_app(url), "openai/full", stream=mode == "stream"), 8)

    async def main() -> None:
        for _ in range(50):  # warm-up: imports, pools, recorded resolutions
            await one()
        calls = 0

        def count(frame: Any, event: str, arg: Any) -> None:
            nonlocal calls
            calls += event == "call"

        sys.setprofile(count)
        await one()
        sys.setprofile(None)
        print(calls, flush=True)
        loop = asyncio.get_running_loop()
        while (await loop.run_in_executor(None, sys.stdin.readline)).strip() == "go":
            started = time.process_time()
            for _ in range(requests):
                await one()
            print((time.process_time() - started) / requests * 1e6, flush=True)

    asyncio.run(main())


class _Counting(asyncio.Protocol):
    """Reads one raw streamed response and counts its events, nothing more."""

    def __init__(self, done: asyncio.Future[int]) -> None:
        self.done, self.events = done, 0

    def data_received(self, data: bytes) -> None:
        self.events += data.count(b"data:")
        if b"[DONE]" in data and not self.done.done():
            self.done.set_result(self.events)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_exception(ConnectionError("the upstream closed before [DONE]"))


class _InTheRead(asyncio.Protocol):
    """The whole paced chunk in the read callback: the floor of a design without a task per stream.

    Each network read goes, inside ``data_received``, through what the app does for a chunk
    and nothing else: the chunked framing, the provider's SSE reader (msgspec, its shape
    check), the engine's :class:`HotLoop` with the chain and state a real request of the app
    prepared (the provider and the three bundled extensions), and the facade's text frame.
    What it leaves out is the layers between: the task woken per read, the awaits from the
    socket up to the engine's driver, the turn, the facade's generator, the batching and the
    response's ``send``. So the app's figure less this one is what those layers cost a chunk.
    """

    def __init__(self, done: asyncio.Future[int], hot: Any, reader: Any, texts: Any) -> None:
        from agent_core_providers.transport.framing import Chunked

        self.done, self.hot, self.reader, self.texts = done, hot, reader, texts
        self.framing, self.head, self.sent = Chunked(), b"", 0  # sent: text frames made

    def data_received(self, data: bytes) -> None:
        if self.head is not None:  # the response's head, then the body in the same read
            self.head += data
            if b"\r\n\r\n" not in self.head:
                return
            _, data = self.head.split(b"\r\n\r\n", 1)
            self.head = None
            if not data:
                return
        feed, frame = self.hot.feed, self.texts.frame
        for part in self.framing.feed(data):
            for value in self.reader.feed(part):
                for event in feed(value):
                    if event.type == "partial":
                        frame(event.message.content)
                        self.sent += 1
        if self.reader.done and not self.done.done():
            self.done.set_result(self.sent)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_exception(ConnectionError("the upstream closed before [DONE]"))


class _WakingTask(_InTheRead):
    """As :class:`_InTheRead`, but each read wakes a task that does the chunk's work (one await per read)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.reads: list[bytes] = []
        self.waiter: asyncio.Future[None] | None = None

    def data_received(self, data: bytes) -> None:
        self.reads.append(data)
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        while not self.done.done():
            if not self.reads:
                self.waiter = loop.create_future()
                await self.waiter
            reads, self.reads = self.reads, []
            for data in reads:
                _InTheRead.data_received(self, data)
        return self.done.result()


def _prepared_hot_loop() -> Callable[[], Any]:
    """Remember the chain, history and state of the app's next :class:`HotLoop`; a new loop on them per call."""
    from agent_core.engine import hot_loop

    made: list[tuple[Any, ...]] = []
    original = hot_loop.HotLoop.__init__

    def remembering(self: Any, chain: Any, native: Any, state: Any, **kwargs: Any) -> None:
        made.append((chain, native, state))
        original(self, chain, native, state, **kwargs)

    hot_loop.HotLoop.__init__ = remembering  # type: ignore[method-assign]

    def new() -> Any:
        hot_loop.HotLoop.__init__ = original  # type: ignore[method-assign]
        chain, native, state = made[-1]
        return hot_loop.HotLoop(chain, native, state, request_id="in-the-read")

    return new


async def cpu_per_chunk(one: Callable[[int], Awaitable[Any]], n: int) -> float:
    """CPU per chunk of ``n`` streams of ``one(tokens)`` at once, the set-up taken out (108 tokens less 8)."""
    started = time.process_time()
    await asyncio.gather(*(one(8) for _ in range(n)))
    short = time.process_time() - started
    started = time.process_time()
    await asyncio.gather(*(one(108) for _ in range(n)))
    return (time.process_time() - started - short) / (100 * n) * 1e6


def paced_worker(url: str, streams: list[int], rounds: int) -> None:
    """Per count of streams, print CPU per paced chunk: the app's, then the bare read's (JSON, a line per round)."""
    app = _app(url)
    host, port = url.removeprefix("http://").split(":")

    async def bare(tokens: int) -> int:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[int] = loop.create_future()
        transport, _ = await loop.create_connection(lambda: _Counting(done), host, int(port))
        body = json.dumps({"model": "paced", "messages": [{"role": "user", "content": "hi"}],
                           "max_tokens": tokens, "stream": True}).encode()
        transport.write(b"POST /v1/chat/completions HTTP/1.1\r\nhost: %s\r\ncontent-type: application/json\r\n"
                        b"content-length: %d\r\n\r\n%s" % (host.encode(), len(body), body))
        try:
            return await done
        finally:
            transport.close()

    new_hot_loop = _prepared_hot_loop()

    async def in_the_read(tokens: int, kind: type = _InTheRead) -> int:
        from agent_core.server.facades.chat.dialect import TextFrames
        from agent_core_providers.openai import OpenAIProvider

        loop = asyncio.get_running_loop()
        done: asyncio.Future[int] = loop.create_future()
        reader = OpenAIProvider()._api_reader(())
        protocol = kind(done, new_hot_loop(), reader, TextFrames("r", "paced", 0))
        transport, _ = await loop.create_connection(lambda: protocol, host, int(port))
        body = json.dumps({"model": "paced", "messages": [{"role": "user", "content": "hi"}],
                           "max_tokens": tokens, "stream": True}).encode()
        transport.write(b"POST /v1/chat/completions HTTP/1.1\r\nhost: %s\r\ncontent-type: application/json\r\n"
                        b"content-length: %d\r\n\r\n%s" % (host.encode(), len(body), body))
        try:
            frames = await (protocol.run() if kind is _WakingTask else done)
        finally:
            transport.close()
        if frames != tokens:  # every token went through the chain to a frame, or the figure means nothing
            raise SystemExit(f"in the read: {frames} text frames for {tokens} tokens")
        return frames

    from agent_core import AgentCore, Message

    core = AgentCore.discover()
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))

    async def library(tokens: int) -> int:
        config = {"provider": "openai", "base_url": f"{url}/v1", "api_key": "k", "model": "paced",
                  "max_tokens": tokens, "max_retries": 0}
        seen = 0
        async for event in core.astream_request(session, config):
            seen += event.type == "partial"
        if seen != tokens:
            raise SystemExit(f"the library: {seen} partials for {tokens} tokens")
        return seen

    async def main() -> None:
        one = _app_call(app, "openai/paced", stream=True)
        for n in streams:
            await asyncio.gather(*(one(8) for _ in range(n)))  # warm-up (the first also prepares the hot loop)
            await asyncio.gather(*(bare(8) for _ in range(n)))
            await asyncio.gather(*(in_the_read(8) for _ in range(n)))
            await asyncio.gather(*(library(8) for _ in range(n)))
            for _ in range(rounds):
                print(json.dumps([n, await cpu_per_chunk(one, n), await cpu_per_chunk(bare, n),
                                  await cpu_per_chunk(in_the_read, n),
                                  await cpu_per_chunk(functools.partial(in_the_read, kind=_WakingTask), n),
                                  await cpu_per_chunk(library, n)]), flush=True)

    asyncio.run(main())


@contextlib.contextmanager
def _upstream(pace_ms: float) -> Iterator[str]:
    """``bench_gateway.py``'s upstream, pacing ``pace_ms`` between tokens: its URL, stopped afterwards."""
    upstream, url = start_upstream(pace_ms)
    try:
        yield url
    finally:
        assert upstream.stdin is not None
        upstream.stdin.close()
        stop(upstream)


def _ratio(a: float, b: float) -> str:
    """``a / b`` as ``4.2x``; ``n/a`` when ``b`` is not above zero (a quick round's CPU difference can be)."""
    return f"{a / b:5.1f}x" if b > 0 else "  n/a"


def run_paced(args: argparse.Namespace) -> int:
    with _upstream(args.pace_ms) as url:
        for tree in [HERE.parent, *args.tree]:
            proc = subprocess.Popen([sys.executable, __file__, "--worker", url, "--mode", "paced",
                                     "--paced", ",".join(map(str, args.paced)), "--rounds", str(args.rounds)],
                                    stdout=subprocess.PIPE, text=True, env=tree_env(Path(tree).resolve()))
            assert proc.stdout is not None
            by_n: dict[int, list[tuple[float, float, float]]] = {}
            for line in proc.stdout:
                n, *figures = json.loads(line)
                by_n.setdefault(n, []).append(figures)
            if proc.wait() != 0:
                raise SystemExit(f"the paced worker for {tree} failed")
            for n, rows in by_n.items():
                app, floor, fused, tasked, lib = (statistics.median(r[i] for r in rows) for i in range(5))
                print(f"paced {args.pace_ms:g} ms, {n:>3} streams  {tree!s:<32} app {app:7.1f} us a chunk, "
                      f"bare read {floor:6.1f} us, app / bare {_ratio(app, floor)}; in the read {fused:6.1f} us "
                      f"(app / it {_ratio(app, fused)}), in a woken task {tasked:6.1f} us, the library {lib:6.1f} us",
                      flush=True)
    return 0


def run(args: argparse.Namespace) -> int:
    trees = [Path(t).resolve() for t in [HERE.parent, *args.tree]]
    with _upstream(0.0) as url:
        for mode in ("plain", "stream"):
            procs = []
            for tree in trees:
                proc = subprocess.Popen([sys.executable, __file__, "--worker", url, "--mode", mode,
                                         "--requests", str(args.requests)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=tree_env(tree))
                assert proc.stdout is not None
                procs.append((tree, proc, int(proc.stdout.readline()), []))
            for r in range(args.rounds):
                for tree, proc, _, times in (procs if r % 2 == 0 else procs[::-1]):
                    assert proc.stdin is not None and proc.stdout is not None
                    proc.stdin.write("go\n")
                    proc.stdin.flush()
                    times.append(float(proc.stdout.readline()))
            label = "non-streamed" if mode == "plain" else "streamed, 8 tokens"
            for tree, proc, calls, times in procs:
                stop(proc)
                print(f"{label:<20} {str(tree):<32} {calls:>6} Python calls a request; CPU a request "
                      f"min {min(times):7.0f} us, median {statistics.median(times):7.0f} us", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tree", action="append", default=[], help="another checkout to measure, taking turns")
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--requests", type=int, default=150, help="requests per round")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 rounds of 5 requests")
    parser.add_argument("--paced", type=lambda v: [int(x) for x in v.split(",")], metavar="N,...",
                        help="instead: CPU per paced chunk at these counts of streams, beside a bare read")
    parser.add_argument("--pace-ms", type=float, default=20.0, help="the upstream's pause between tokens (--paced)")
    parser.add_argument("--worker", metavar="UPSTREAM", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="plain", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker and args.mode == "paced":
        paced_worker(args.worker, args.paced, args.rounds)
        return 0
    if args.worker:
        worker(args.worker, args.mode, args.requests)
        return 0
    if args.quick:
        args.rounds, args.requests = 2, 5
    if args.paced:
        if args.rounds == 16:  # the default is for the setup figures; a paced round takes seconds
            args.rounds = 2 if args.quick else 3
        return run_paced(args)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
