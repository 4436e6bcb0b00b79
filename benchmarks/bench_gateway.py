"""The gateway figure of record: ``agent-core serve`` relaying paced model streams to
many clients at once, measured from outside, optionally side by side with the LiteLLM proxy.

    .venv/bin/python benchmarks/bench_gateway.py                      # N = 1, 50, 200, 500
    .venv/bin/python benchmarks/bench_gateway.py --litellm /tmp/litellm-venv
    .venv/bin/python benchmarks/bench_gateway.py --streams 1,50 --rounds 1
    .venv/bin/python benchmarks/bench_gateway.py --quick              # smoke run, a few seconds
    .venv/bin/python benchmarks/bench_gateway.py --workers 2          # also agent-core*2 (and litellm*2)

Processes
---------
* **Upstream** (this file with ``--upstream``): a raw asyncio HTTP/1.1 server speaking OpenAI
  Chat Completions. A streamed call to model ``paced`` gets a role chunk and the first token at
  once, then one token every ``--pace-ms`` (20 ms: a model's pace) until ``max_tokens`` tokens,
  then the finish chunk, usage and ``[DONE]``; each SSE event is its own chunked-encoding write.
  Model ``full`` streams the same without pauses (full speed). A call without ``stream`` gets
  the whole answer as one JSON body.
* **Gateway**: ``agent-core serve`` (one process, the ``openai`` provider pointed at the
  upstream, the default extensions; model ``openai/paced``), or the LiteLLM proxy with
  ``--litellm VENV`` (installed in an environment of its own, never a dependency of agent-core;
  one worker, both models routed to the same upstream, no database, no callbacks, message
  logging off). ``direct`` is the clients talking to the upstream itself: the harness's floor.
  With ``--relay``, ``relay`` is a bare byte relay (this file with ``--relay``): asyncio
  protocols on uvloop, each client connection piped to a connection of its own to the upstream,
  bytes passed on unread. No gateway that parses and re-encodes a chunk can cost less in Python
  on this machine: it is the floor under the per-chunk figures.
  With ``--workers N`` (N > 1), ``agent-core*N`` (``agent-core serve --workers N``) and, with
  ``--litellm``, ``litellm*N`` (``--num_workers N``) run beside the one-process gateways, in the
  same run; their CPU is that of the parent and every worker.
* **Clients** (this file with ``--worker``): worker processes, each running up to 125 streams
  as plain asyncio protocols, one connection per stream, finding the tokens in the bytes as they
  arrive (no coroutine step per read, so the clients leave most of the two cores to the
  gateway). Workers start and import before a round; all streams of a round start together.

Figures (a cell is one gateway at N concurrent streams; median over ``--rounds`` rounds)
--------------------------------------------------------------------------------
* ``cpu/chunk``: the gateway's CPU (user + system of the process and its children, from
  ``/proc/<pid>/stat``) from the start of the round to its last token, over the tokens the
  clients received (for ``direct``: the upstream's own);
* ``delay p50/p99``: each token's arrival at its client minus the moment the upstream wrote it
  (the token's text carries the upstream's monotonic clock), ms;
* ``gap p50/p99``: each interval between two tokens at a client, minus the pacing, over all
  streams of the round, ms (tokens that arrive together after a stall give negative gaps);
* ``first p50/p99``: from opening the connection to the first token, ms; ``wall``: the round.
  Under the table, the largest cell's first tokens at six percentiles, and the cores it would
  take to relay all its streams at once at the cell's CPU per chunk (a process has one);
* ``cores``: the whole machine's busy CPU over the round (clients, upstream and gateway share
  two cores, with whatever else runs);
* ``1 full``: one stream of ``--full-tokens`` at full speed (median of 9). After each of its
  rounds the same stream goes through ``AgentCore.astream_request`` in a process of its own,
  charged its own CPU: the library's async path, the yardstick of the first gateway target;
* ``req/s``: non-streamed calls (``full``, 8 tokens) from 8 keep-alive clients in 2 processes,
  ``--seconds`` a round, median of ``--plain-rounds``, measured first while the gateways are fresh;
* ``RSS``: the gateway's resident memory after a warm-up (idle), and its high-water mark at
  the end of the run (peak; summed over its processes).
* with ``--relay``, a ``floor:`` line a cell: the bare relay's and agent-core's CPU per chunk, the
  kernel's part of each (the system CPU of ``/proc``), and, with ``--litellm`` too, what a 20x
  lead on LiteLLM would leave above the relay's floor against what agent-core spends there.

``--profile PREFIX --streams 200`` runs py-spy on ``agent-core serve`` through the cells instead
(``gateway_profile.py``; 0 is the full-speed stream, -1 the non-streamed calls).

Every stream must deliver every token, and every non-streamed reply must hold the text: a
broken relay fails the run. The machine has 2 cores shared with other work: compare ratios
within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
API_KEY = "sk-bench-not-a-secret"  # the upstream's key, and the token both gateways want
MARK = b"zq"  # every token's text starts with it: a client counts tokens by counting it
STAMPED = re.compile(rb"zq\d+t(\d+) ")  # a streamed token: its number, then when the upstream wrote it (µs)


# -- the upstream (its own process) -----------------------------------------------------------


def _event(data: Any) -> bytes:
    payload = data if isinstance(data, bytes) else json.dumps(data, separators=(",", ":")).encode()
    event = b"data: " + payload + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(event), event)


def _chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
    body: dict[str, Any] = {"id": "chatcmpl-gw", "object": "chat.completion.chunk", "created": 1718000000,
                            "model": "m", "choices": [] if usage else
                            [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
    if usage:
        body["usage"] = usage
    return _event(body)


def _token(i: int) -> str:
    return f"zq{i} "


_BEFORE, _AFTER = _chunk({"content": "@@"}).split(b"\r\n", 1)[1][:-2].split(b"@@")  # a token's SSE event around its text


def _stamped(i: int) -> bytes:
    """Token ``i``'s chunk, its text carrying the monotonic clock (shared by all processes) as written;
    built from bytes, not ``json.dumps``, so the upstream stays cheap at hundreds of streams."""
    event = b"%szq%dt%d %s" % (_BEFORE, i, int(time.monotonic() * 1e6), _AFTER)
    return b"%x\r\n%s\r\n" % (len(event), event)


async def _stream(writer: asyncio.StreamWriter, tokens: int, pace: float) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                 + _chunk({"role": "assistant", "content": ""}) + _stamped(0))
    await writer.drain()
    for i in range(1, tokens):
        if pace:
            await asyncio.sleep(pace)
        writer.write(_stamped(i))
        if writer.transport.get_write_buffer_size() > 65536:  # a reader behind: wait for it
            await writer.drain()
    usage = {"prompt_tokens": 5, "completion_tokens": tokens, "total_tokens": tokens + 5}
    writer.write(_chunk({}, "stop") + _chunk({}, usage=usage) + _event(b"[DONE]") + b"0\r\n\r\n")
    await writer.drain()


def _whole(tokens: int) -> bytes:
    text = "".join(_token(i) for i in range(tokens))
    return json.dumps({"id": "chatcmpl-gw", "object": "chat.completion", "created": 1718000000, "model": "m",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 5, "completion_tokens": tokens, "total_tokens": tokens + 5}}
                      ).encode()


async def _relay(upstream: str) -> None:
    """A bare TCP relay to ``upstream``: one upstream connection per client connection, bytes passed on unread."""
    host, port = upstream.removeprefix("http://").split(":")
    loop = asyncio.get_running_loop()

    class Upstream(asyncio.Protocol):
        def __init__(self, client: asyncio.Transport) -> None:
            self.client = client

        def data_received(self, data: bytes) -> None:
            self.client.write(data)

        def connection_lost(self, exc: Exception | None) -> None:
            self.client.close()

    class Client(asyncio.Protocol):
        def connection_made(self, transport: Any) -> None:
            self.transport, self.early, self.up = transport, [], None
            loop.create_task(self.open())

        async def open(self) -> None:
            self.up, _ = await loop.create_connection(lambda: Upstream(self.transport), host, int(port))
            for data in self.early:
                self.up.write(data)

        def data_received(self, data: bytes) -> None:
            if self.up is None:
                self.early.append(data)
            else:
                self.up.write(data)

        def connection_lost(self, exc: Exception | None) -> None:
            if self.up is not None:
                self.up.close()

    server = await loop.create_server(Client, "127.0.0.1", 0, backlog=4096)  # as the upstream: 500 at once
    print(server.sockets[0].getsockname()[1], flush=True)
    await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes stdin


async def _upstream(pace: float) -> None:
    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:] if h)}
                body = json.loads(await reader.readexactly(int(headers.get("content-length") or 0)) or b"{}")
                tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
                if body.get("stream"):
                    await _stream(writer, tokens, pace if "paced" in str(body.get("model")) else 0.0)
                    if headers.get("connection", "").lower() == "close":
                        break
                else:
                    answer = _whole(tokens)
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                                 b"content-length: %d\r\n\r\n%s" % (len(answer), answer))
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0, backlog=4096)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent closes stdin


# -- the clients (worker processes) -----------------------------------------------------------


async def _read_body(reader: asyncio.StreamReader, head: bytes, on_data: Any) -> None:
    """Read one response body after its ``head``, handing each decoded piece to ``on_data``."""
    lower = head.lower()
    if b"transfer-encoding: chunked" in lower:
        while True:
            size = int((await reader.readline()).split(b";")[0], 16)
            if size == 0:
                await reader.readline()
                return
            on_data((await reader.readexactly(size + 2))[:-2])
    marker = lower.find(b"content-length:")
    if marker >= 0:
        on_data(await reader.readexactly(int(lower[marker + 15:].split(b"\r\n", 1)[0])))
        return
    while data := await reader.read(65536):
        on_data(data)


def _request(host: str, path: str, body: dict[str, Any], keep_alive: bool) -> bytes:
    raw = json.dumps(body).encode()
    return (f"POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
            f"authorization: Bearer {API_KEY}\r\ncontent-length: {len(raw)}\r\n"
            f"connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n").encode() + raw


@dataclass
class Tally:
    """What one worker saw: first-token times (s); gaps added over the pacing and each token's delay
    from the upstream's write to its arrival (ms); tokens; failures; non-streamed replies."""

    first: list[float] = field(default_factory=list)
    gaps: list[float] = field(default_factory=list)
    delays: list[float] = field(default_factory=list)
    tokens: int = 0
    bad: list[str] = field(default_factory=list)
    replies: int = 0
    cpu: float = 0.0  # the worker's own CPU seconds from "go" to the end


class _StreamReading(asyncio.Protocol):
    """One streamed response, read straight off the transport: no coroutine is resumed per read,
    so a client costs a few µs per chunk. Tokens are found in the raw bytes (a chunk-size line
    never holds the marker; a gateway that cut a token across two chunks would fail the count).
    The request asks the server to close the connection after the response: that is its end."""

    def __init__(self, tally: Tally) -> None:
        self.tally, self.seen, self.head, self.tail = tally, [], b"", b""
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        now, buf = time.monotonic(), self.tail + data
        if not self.head:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                self.tail = buf
                return
            self.head, buf = buf[:end], buf[end + 4:]
        end = 0
        for match in STAMPED.finditer(buf):
            self.seen.append(now)
            self.tally.delays.append(round(now * 1e3 - int(match[1]) / 1e3, 3))
            end = match.end()
        cut = buf.find(MARK, end)  # a token cut between two reads waits for the rest
        self.tail = buf[cut:] if cut >= 0 else buf[-1:]
        if buf.endswith(b"\r\n0\r\n\r\n") and self.transport:  # the chunked body's end
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def _one_stream(url: str, model: str, tokens: int, pace_ms: float, tally: Tally) -> None:
    host, port = url.split("//", 1)[1].split(":")
    started = time.monotonic()
    request = _request(f"{host}:{port}", "/v1/chat/completions",
                       {"model": model, "messages": [{"role": "user", "content": "Count."}], "stream": True,
                        "max_tokens": tokens}, keep_alive=False)
    try:
        transport, reading = await asyncio.get_running_loop().create_connection(
            lambda: _StreamReading(tally), host, int(port))
        transport.write(request)
        await reading.done
    except OSError as exc:
        tally.bad.append(f"{type(exc).__name__}: {exc}"[:200])
        return
    seen = reading.seen
    if not reading.head.startswith(b"HTTP/1.1 200"):
        tally.bad.append(reading.head.split(b"\r\n", 1)[0].decode("latin-1") or "no answer")
    elif len(seen) != tokens:
        tally.bad.append(f"{len(seen)} tokens of {tokens}")
    tally.tokens += len(seen)
    if seen:
        tally.first.append(seen[0] - started)
        tally.gaps.extend(round((b - a) * 1e3 - pace_ms, 3) for a, b in itertools.pairwise(seen))


async def _plain_client(url: str, model: str, until: float, tally: Tally) -> None:
    host, port = url.split("//", 1)[1].split(":")
    request = _request(f"{host}:{port}", "/v1/chat/completions",
                       {"model": model, "messages": [{"role": "user", "content": "Count."}], "max_tokens": 8},
                       keep_alive=True)
    reader, writer = await asyncio.open_connection(host, int(port))
    while time.monotonic() < until:
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        parts: list[bytes] = []
        await _read_body(reader, head, parts.append)
        if not head.startswith(b"HTTP/1.1 200") or b"".join(parts).count(MARK) != 8:
            tally.bad.append(head.split(b"\r\n", 1)[0].decode("latin-1") + " " + b"".join(parts)[:120].decode())
            break
        tally.replies += 1
    writer.close()


async def _worker(args: argparse.Namespace) -> None:
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # the parent's "go"
    tally, started = Tally(), time.process_time()
    if args.plain:
        until = time.monotonic() + args.plain
        jobs = [_plain_client(args.url, args.model, until, tally) for _ in range(args.streams)]
    else:
        jobs = [_one_stream(args.url, args.model, args.tokens, args.pace_ms, tally) for _ in range(args.streams)]
    await asyncio.gather(*jobs)
    tally.cpu = time.process_time() - started
    print(json.dumps(tally.__dict__), flush=True)


# -- processes and /proc ----------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (a proxy may fork workers)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            try:
                todo += [int(c) for c in task.read_text().split()]
            except OSError:
                pass
    return found


def cpu_split(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of a process and its children so far, from ``/proc``."""
    user = system = 0.0
    for p in _tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        user += int(fields[11]) / os.sysconf("SC_CLK_TCK")
        system += int(fields[12]) / os.sysconf("SC_CLK_TCK")
    return user, system


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its children so far."""
    return sum(cpu_split(pid))


def memory_mib(pid: int, key: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (high-water mark) of a process tree, MiB."""
    total = 0
    for p in _tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith(key + ":"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def machine_busy() -> float:
    """CPU seconds all cores have been busy so far (``/proc/stat``)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_listening(proc: subprocess.Popen[Any], url: str, log: Path, what: str, timeout: float = 120) -> None:
    host, port = url.split("//", 1)[1].split(":")
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited: {log.read_text()[-2000:]}")
        try:
            with socket.create_connection((host, int(port)), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start: {log.read_text()[-2000:]}") from None
            time.sleep(0.2)


@dataclass
class Gateway:
    """A running gateway (or ``direct``: the upstream itself) and the model names it routes."""

    name: str
    url: str
    paced: str
    full: str
    proc: subprocess.Popen[Any] | None = None
    upstream: int = 0  # the upstream's pid, whose CPU the harness column counts

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc else os.getpid()


def start_upstream(pace_ms: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, __file__, "--upstream", "--pace-ms", str(pace_ms)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, f"http://127.0.0.1:{int(proc.stdout.readline())}"


def tree_env(tree: Path) -> dict[str, str]:
    """The environment that imports agent-core's four packages from ``tree`` (a checkout)."""
    paths = [str(tree / part) for part in ("core", "providers", "plugins", "features")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths + [os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


def start_relay(upstream: str) -> Gateway:
    proc = subprocess.Popen([sys.executable, __file__, "--relay", "--url", upstream],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return Gateway("relay", f"http://127.0.0.1:{int(proc.stdout.readline())}", "paced", "full", proc)


def start_agent_core(upstream: str, home: str, tree: Path, workers: int = 1) -> Gateway:
    port = _free_port()
    log = Path(home) / f"serve-{workers}.log"
    args = [sys.executable, "-m", "agent_core.cli", "serve", "--log-level", "warning", "--port", str(port),
            "--token", API_KEY, "--max-concurrent", "4096", "-c", f"base_url={upstream}/v1", "-c", f"api_key={API_KEY}",
            "-c", "max_retries=0", "--workers", str(workers)]
    with log.open("wb") as err:
        proc = subprocess.Popen(args, env={**tree_env(tree), "AGENT_CORE_HOME": home}, stdout=subprocess.DEVNULL,
                                stderr=err)
    url = f"http://127.0.0.1:{port}"
    _wait_listening(proc, url, log, "agent-core serve")
    return Gateway("agent-core" if workers == 1 else f"agent-core*{workers}", url, "openai/paced", "openai/full", proc)


def start_litellm(venv: str, upstream: str, home: str, workers: int = 1) -> Gateway:
    """The LiteLLM proxy from ``venv``: one worker, both models at the upstream, nothing logged or stored."""
    port = _free_port()
    config = Path(home) / "litellm.yaml"
    models = "".join(f"  - model_name: {m}\n    litellm_params:\n      model: openai/{m}\n"
                     f"      api_base: {upstream}/v1\n      api_key: {API_KEY}\n" for m in ("paced", "full"))
    config.write_text("model_list:\n" + models + "litellm_settings:\n  telemetry: false\n"
                      "  turn_off_message_logging: true\n  drop_params: true\n  callbacks: []\n"
                      "general_settings:\n  disable_spend_logs: true\n  disable_error_logs: true\n"
                      f"  master_key: {API_KEY}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "LITELLM_MASTER_KEY")}
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_LOG="ERROR", LITELLM_TELEMETRY="False",
               NO_DOCS="True", HOME=home)
    log = Path(home) / "litellm.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([str(Path(venv) / "bin" / "litellm"), "--config", str(config), "--host", "127.0.0.1",
                                 "--port", str(port), "--num_workers", str(workers)],
                                env=env, stdout=out, stderr=subprocess.STDOUT, cwd=home)
    url = f"http://127.0.0.1:{port}"
    _wait_listening(proc, url, log, "litellm proxy", timeout=240)
    return Gateway("litellm" if workers == 1 else f"litellm*{workers}", url, "paced", "full", proc)


# -- rounds and cells -------------------------------------------------------------------------


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_round(gateway: Gateway, model: str, streams: int, tokens: int, pace_ms: float,
              plain: float = 0.0, per_worker: int = 125) -> dict[str, float]:
    """One round: ``streams`` clients at once through ``gateway``; the round's figures."""
    count = max(1, -(-streams // per_worker))
    shares = [streams // count + (1 if i < streams % count else 0) for i in range(count)]
    workers = [subprocess.Popen([sys.executable, __file__, "--worker", "--url", gateway.url, "--model", model,
                                 "--streams", str(s), "--tokens", str(tokens), "--pace-ms", str(pace_ms),
                                 "--plain", str(plain)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
               for s in shares]
    for w in workers:
        assert w.stdout is not None and w.stdout.readline().strip() == "ready", "a client worker did not start"
    pid = gateway.pid
    (user, system), busy, up, started = cpu_split(pid), machine_busy(), cpu_seconds(gateway.upstream), time.monotonic()
    for w in workers:
        assert w.stdin is not None
        w.stdin.write("go\n")
        w.stdin.flush()
    tallies = [Tally(**json.loads(w.stdout.readline() or "{}")) for w in workers]  # type: ignore[union-attr]
    wall = time.monotonic() - started
    now = cpu_split(pid)
    user, system = now[0] - user, now[1] - system
    cpu, busy, up = user + system, machine_busy() - busy, cpu_seconds(gateway.upstream) - up
    for w in workers:
        w.wait()
    bad = [b for t in tallies for b in t.bad]
    if bad:
        raise AssertionError(f"{gateway.name}, {streams} stream(s) of {model}: {len(bad)} failed, e.g. {bad[0]}")
    first = [f for t in tallies for f in t.first]
    gaps = [g for t in tallies for g in t.gaps]
    delays = [d for t in tallies for d in t.delays]
    chunks = sum(t.tokens for t in tallies)
    replies = sum(t.replies for t in tallies)
    return {"cpu_us": cpu / max(chunks, replies, 1) * 1e6, "sys_us": system / max(chunks, replies, 1) * 1e6,
            "gap50": _pct(gaps, 0.5), "gap99": _pct(gaps, 0.99),
            "delay50": _pct(delays, 0.5), "delay99": _pct(delays, 0.99),
            "first50": _pct(first, 0.5) * 1e3, "first99": _pct(first, 0.99) * 1e3, "cores": busy / wall,
            **{f"first{q}": _pct(first, q / 100) * 1e3 for q in (10, 25, 75, 90)},
            "wall": wall, "rate": replies / wall,
            "harness_us": (up + sum(t.cpu for t in tallies)) / max(chunks, replies, 1) * 1e6}


def cell(gateways: list[Gateway], rounds: int, library: LibraryPath | None = None,
         **kw: Any) -> dict[str, dict[str, float]]:
    """Each gateway's median figures over ``rounds``, the gateways taking turns round by round
    (so drifting machine load hits them alike); ``library`` streams once after each round."""
    full = kw.pop("full", False)
    runs: dict[str, list[dict[str, float]]] = {g.name: [] for g in gateways}
    if library:
        runs["library"] = []
    for _ in range(rounds):
        for g in gateways:
            runs[g.name].append(run_round(g, g.full if full else g.paced, **kw))
        if library:
            runs["library"].append({"cpu_us": library.once()})
    return {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}


async def _library(url: str, tokens: int) -> None:
    """The library's side: one ``AgentCore.astream_request`` on the full-speed stream per line
    read, answering its CPU µs per chunk (the process's own CPU: the upstream is elsewhere)."""
    from agent_core import AgentCore, Message

    core = AgentCore.discover()
    session = core.add_message(core.create_session(), Message(role="user", content="Count."))
    config = {"provider": "openai", "base_url": f"{url}/v1", "api_key": API_KEY, "model": "full",
              "max_tokens": tokens, "max_retries": 0}

    async def once() -> float:
        started, seen = time.process_time(), 0
        async for event in core.astream_request(session, config):
            if event.type == "partial":
                seen += str(event.message.content or "").count("zq")
            elif event.type == "done" and not event.outcome.ok:
                raise RuntimeError(f"the library's request failed: {event.outcome}")
        if seen != tokens:
            raise AssertionError(f"the library saw {seen} tokens of {tokens}")
        return (time.process_time() - started) / tokens * 1e6

    await once()  # warm-up: imports, the connection pool
    print("ready", flush=True)
    while await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline):
        print(await once(), flush=True)


class LibraryPath:
    """``AgentCore.astream_request`` in a process of its own, streaming when asked."""

    def __init__(self, upstream: str, tokens: int, tree: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--library", "--url", upstream, "--tokens", str(tokens)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=tree_env(tree))
        if self._line() != "ready":
            raise RuntimeError("the library process did not start")

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line:
            raise RuntimeError("the library's stream failed (its traceback is above)")
        return line

    def once(self) -> float:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        return float(self._line())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


# -- the run ----------------------------------------------------------------------------------


def _row(label: str, name: str, f: dict[str, float]) -> None:
    print(f"{label:<10}{name:<12}{f['cpu_us']:>12.1f}{f['delay50']:>11.2f}{f['delay99']:>11.2f}{f['gap50']:>9.2f}"
          f"{f['gap99']:>9.2f}{f['first50']:>11.1f}{f['first99']:>11.1f}{f['wall']:>8.1f}{f['cores']:>7.2f}"
          f"{f['harness_us']:>9.1f}", flush=True)


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("uvicorn", "uvloop", "httptools", "httpx", "httpcore"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            pass
    return f"Python {sys.version.split()[0]}, " + ", ".join(found)


def _verdict(text: str, value: float, goal: str, ok: bool) -> None:
    print(f"target: {text} = {value:.2f} ({goal}): {'met' if ok else 'MISSED'}")


def run(args: argparse.Namespace) -> int:
    upstream, up_url = start_upstream(args.pace_ms)
    home = tempfile.mkdtemp(prefix="bench-gateway-")
    gateways = [Gateway("direct", up_url, "paced", "full", upstream, upstream.pid)]
    try:
        gateways.append(start_agent_core(up_url, home, args.tree))
        if args.litellm and not args.profile:
            gateways.append(start_litellm(args.litellm, up_url, home))
        if args.workers > 1 and not args.profile:
            gateways.append(start_agent_core(up_url, home, args.tree, args.workers))
            if args.litellm:
                gateways.append(start_litellm(args.litellm, up_url, home, args.workers))
        if args.relay and not args.profile:
            gateways.append(start_relay(up_url))
        for g in gateways:
            g.upstream = upstream.pid
        for g in gateways:  # warm-up: imports, pools, first-call caches
            run_round(g, g.full, 1, 50, 0.0)
            run_round(g, g.paced, 4, 5, args.pace_ms)
            run_round(g, g.full, 1, 8, 0.0, plain=0.3)
        if args.profile:
            profile(args, gateways[1])
            return 0
        figures = measure(args, gateways, up_url)
    finally:
        for g in gateways[1:]:
            if g.proc:
                stop(g.proc)
        assert upstream.stdin is not None
        upstream.stdin.close()
        stop(upstream)
    verdicts(args, figures)
    return 0


def measure(args: argparse.Namespace, gateways: list[Gateway], up_url: str) -> dict[Any, Any]:
    """Every cell, the library's path, the non-streamed rate and memory, printed as they come."""
    idle = {g.name: memory_mib(g.pid, "VmRSS") for g in gateways[1:]}
    # non-streamed first, while every gateway is fresh; rounds alternate between them
    plain = cell(gateways[1:], args.plain_rounds, streams=8, tokens=8, pace_ms=0.0, plain=args.seconds,
                 per_worker=4, full=True)
    print(f"non-streamed, 8 keep-alive clients, median of {args.plain_rounds} rounds of {args.seconds:g} s: "
          + ", ".join(f"{k} {v['rate']:.0f} req/s ({v['cpu_us']:.0f} us CPU a request)" for k, v in plain.items()))
    print(f"upstream pacing {args.pace_ms:g} ms, {args.tokens} tokens a paced stream, median of {args.rounds} "
          f"round(s); the machine's {os.cpu_count()} cores are shared by clients, upstream and gateway")
    print("(cpu: the gateway's CPU per token relayed, for direct the upstream's own; harness: the upstream's and the "
          "clients' CPU per token; us) " + _versions())
    print(f"{'streams':<10}{'gateway':<12}{'cpu us/chunk':>12}{'delay p50':>11}{'delay p99':>11}{'gap p50':>9}"
          f"{'gap p99':>9}{'first p50':>11}{'first p99':>11}{'wall s':>8}{'cores':>7}{'harness':>9}")
    library = LibraryPath(up_url, args.full_tokens, args.tree)
    try:
        figures: dict[Any, Any] = {"full": cell(gateways, args.full_rounds, library, streams=1,
                                                tokens=args.full_tokens, pace_ms=0.0, full=True)}
    finally:
        library.close()
    figures["plain"] = plain
    lib = figures["lib"] = figures["full"].pop("library")["cpu_us"]
    for name, f in figures["full"].items():
        _row("1 full", name, f)
    print(f"library: AgentCore.astream_request on the same full-speed stream (its own process, after each round): "
          f"{lib:.1f} us/chunk; agent-core serve / library = {figures['full']['agent-core']['cpu_us'] / lib:.2f}x")
    for n in args.streams:  # a lone stream runs longer: the CPU is read in 10 ms clock ticks
        tokens = max(args.tokens, 4 * args.tokens // n)
        figures[n] = cell(gateways, args.rounds, streams=n, tokens=tokens, pace_ms=args.pace_ms)
        for name, f in figures[n].items():
            _row(str(n), name, f)
    _spread(max(args.streams), figures[max(args.streams)], args.pace_ms)
    peak = {g.name: memory_mib(g.pid, "VmHWM") for g in gateways[1:]}
    print("memory idle / peak: " + ", ".join(f"{k} {idle[k]:.0f} / {peak[k]:.0f} MiB" for k in idle))
    return figures


def _spread(n: int, cell: dict[str, Any], pace_ms: float) -> None:
    """When the first tokens came at the largest cell, and what relaying it asks of one process.

    A gateway process runs on one core. Relaying n streams of a token every ``pace_ms`` at the
    cell's CPU per chunk takes n * (1000 / pace_ms) * cpu of it each second; above one core, the
    streams already open keep it busy and the ones still setting up wait for streams to end.
    """
    rate = 1000 / pace_ms if pace_ms > 0 else 0.0  # unpaced streams have no steady rate to ask for
    print(f"first token at {n} streams, ms after opening (p10 / p25 / p50 / p75 / p90 / p99); the cores it takes "
          f"to relay all {n} at once at the cell's CPU per chunk ({n} x {rate:g} chunks/s x cpu):")
    for name, f in cell.items():
        firsts = " / ".join(f"{f[k]:.0f}" for k in ("first10", "first25", "first50", "first75", "first90", "first99"))
        print(f"  {name:<11} {firsts}; needs {n * rate * f['cpu_us'] / 1e6:.2f} cores"
              + (" (the upstream's own)" if name == "direct" else ""))


def verdicts(args: argparse.Namespace, figures: dict[Any, Any]) -> None:
    """Ratios of this run against the gateway's targets (docs/performance.md), one line each."""
    ours = figures["full"]["agent-core"]["cpu_us"] / figures["lib"]
    _verdict("serve CPU per chunk / library's async path, full speed", ours, "goal <= 1.5x", ours <= 1.5)
    top = max(args.streams)
    gap, first = figures[top]["agent-core"]["gap99"], figures[top]["agent-core"]["first50"]
    _verdict(f"p99 gap added at {top} streams, ms", gap, "goal <= 5", gap <= 5)
    late = first - figures[top]["direct"]["first50"]
    _verdict(f"first token p50 at {top} streams after the upstream's own, ms", late, "goal <= 50", late <= 50)
    if args.relay:
        for n in args.streams:
            relay, ours = figures[n]["relay"], figures[n]["agent-core"]
            times = (f"{ours['cpu_us'] / relay['cpu_us']:.1f}x it" if relay["cpu_us"]
                     else "n/a (the relay's CPU was under a clock tick)")
            line = (f"floor: a bare byte relay's CPU per chunk at {n} streams = {relay['cpu_us']:.1f} us "
                    f"({relay['sys_us']:.1f} in the kernel); agent-core = {ours['cpu_us']:.1f} us "
                    f"({ours['sys_us']:.1f} in the kernel), {times}")
            if args.litellm:
                budget = figures[n]["litellm"]["cpu_us"] / 20
                line += (f"; 20x below LiteLLM would be {budget:.1f} us, {budget - relay['cpu_us']:.1f} above the "
                         f"relay, where agent-core spends {ours['cpu_us'] - relay['cpu_us']:.1f}")
            print(line)
    if not args.litellm:
        return
    for n in ["full", *args.streams]:
        x = figures[n]["litellm"]["cpu_us"] / figures[n]["agent-core"]["cpu_us"]
        if n in (50, 500):
            _verdict(f"LiteLLM / agent-core CPU per chunk at {n} streams", x, "goal >= 20x", x >= 20)
        else:
            print(f"LiteLLM / agent-core CPU per chunk at {n if n != 'full' else '1 full-speed'} stream(s) = {x:.2f}")
    x = figures["plain"]["agent-core"]["rate"] / figures["plain"]["litellm"]["rate"]
    _verdict("non-streamed req/s, agent-core / LiteLLM", x, "goal >= 10x", x >= 10)


def profile(args: argparse.Namespace, gateway: Gateway) -> None:
    """py-spy on ``agent-core serve`` through each cell of ``--streams`` (0: one full-speed stream,
    -1: non-streamed calls from 8 clients for ``--seconds``)."""
    from gateway_profile import Sampler, summarize

    for n in args.streams:
        out = Path(f"{args.profile}.{n}.txt")
        sampler = Sampler(gateway.pid, out)
        time.sleep(1.0)  # py-spy attaches
        if n == -1:
            f = cell([gateway], 1, streams=8, tokens=8, pace_ms=0.0, plain=args.seconds, per_worker=4, full=True)
        elif n == 0:
            f = cell([gateway], args.rounds, streams=1, tokens=args.full_tokens, pace_ms=0.0, full=True)
        else:
            f = cell([gateway], args.rounds, streams=n, tokens=args.tokens, pace_ms=args.pace_ms)
        sampler.stop()
        _row({-1: "plain", 0: "1 full"}.get(n, str(n)), gateway.name, f[gateway.name])
        print(summarize(out.read_text()))


def _fast_loop() -> None:
    """Run the harness's own processes on uvloop when it is importable: their wake-ups cost less,
    leaving more of the shared cores to the gateway (the harness column shows what they took)."""
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--streams", type=lambda s: [int(x) for x in s.split(",")], default=[1, 50, 200, 500],
                        help="concurrent paced streams per cell, comma-separated (default 1,50,200,500)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per paced cell (median)")
    parser.add_argument("--tokens", type=int, default=100,
                        help="tokens in a paced stream (4 times as many when a cell has one stream)")
    parser.add_argument("--pace-ms", type=float, default=20.0, help="the upstream's time between tokens")
    parser.add_argument("--full-tokens", type=int, default=10000, help="tokens in the full-speed stream")
    parser.add_argument("--full-rounds", type=int, default=9)
    parser.add_argument("--seconds", type=float, default=5.0, help="how long the non-streamed clients run a round")
    parser.add_argument("--plain-rounds", type=int, default=3, help="rounds of non-streamed calls (median)")
    parser.add_argument("--litellm", metavar="VENV", default=os.environ.get("BENCH_LITELLM_VENV"),
                        help="a virtualenv with 'litellm[proxy]': run the LiteLLM proxy through the same harness "
                             "(default: $BENCH_LITELLM_VENV)")
    parser.add_argument("--relay", action="store_true",
                        help="also run a bare byte relay through the harness: the floor under any gateway's figures")
    parser.add_argument("--tree", type=Path, default=HERE.parent,
                        help="the checkout whose agent-core serves and runs the library path (default: this one)")
    parser.add_argument("--profile", metavar="PREFIX",
                        help="instead of the table: py-spy on agent-core serve through each --streams cell "
                             "(0: one full-speed stream; -1: non-streamed calls), raw samples to PREFIX.<n>.txt, "
                             "shares by area printed")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="also run agent-core serve --workers N (and, with --litellm, LiteLLM --num_workers N) "
                             "beside the one-process gateways")
    parser.add_argument("--quick", action="store_true", help="a smoke run: tiny sizes, one round")
    # the harness's own processes
    parser.add_argument("--upstream", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--library", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--plain", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.upstream or args.worker or (args.relay and args.url):
        _fast_loop()
    if args.relay and args.url:  # the relay's own process
        asyncio.run(_relay(args.url))
        return 0
    if args.upstream:
        asyncio.run(_upstream(args.pace_ms / 1e3))
        return 0
    if args.worker:
        args.streams = args.streams[0]
        asyncio.run(_worker(args))
        return 0
    if args.library:
        asyncio.run(_library(args.url, args.tokens))
        return 0
    if not args.profile and min(args.streams) < 1:
        parser.error("--streams: 0 (full speed) and -1 (non-streamed) are cells of --profile only")
    if args.quick:
        args.streams, args.rounds, args.tokens, args.full_tokens, args.full_rounds = [1, 8], 1, 10, 200, 1
        args.seconds, args.plain_rounds = 0.5, 1
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
