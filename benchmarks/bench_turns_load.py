"""Sessions under contention: many clients posting turns to ``agent-core serve``.

    .venv/bin/python benchmarks/bench_turns_load.py             # the whole matrix, a few minutes
    .venv/bin/python benchmarks/bench_turns_load.py --quick     # a smoke run: 8 clients, SQLite only
    .venv/bin/python benchmarks/bench_turns_load.py --backends sqlite --clients 8,64

What it measures
----------------
An upstream OpenAI Chat Completions server (this file with ``--upstream``, in its own process on
127.0.0.1) answers every streamed call with a role chunk and a first word at once, then a second
word after ``--model-ms`` (20 ms), then the finish chunk, usage and ``[DONE]``. It counts the
calls, and it reads the first user message of each call (which names the session) to count how
many calls run on one session at the same moment: the most it ever saw is reported (``overlap``;
a session's lease should keep it at 1).

For each backend (an SQLite file; a PostgreSQL server this benchmark starts with initdb in a temp
dir, as ``tests/store/_postgres.py`` does) and each number of ``agent-core serve`` processes (1, 2,
all on the same store, with ``--turn-wait 300`` so no queued turn gives up), every cell starts
``clients`` asyncio clients (httpx, one connection each, spread round-robin over the processes);
each posts ``turns`` turns in sequence to ``POST /v1/sessions/{id}/turns`` (default ``busy=enqueue``)
and reads the SSE stream to its end. ``one`` session: every client posts to the same session;
``many``: each client has its own. Turns per client are 8 / 2 / 1 for 8 / 64 / 256 clients.

Per cell:

* ``turns/s``: turns saved (a ``saved`` event) over the cell's wall time;
* ``lost``: turns posted minus turns the store holds, read back with ``GET /v1/sessions/{id}``
  (its revision must equal the session's turns, its messages twice that, and each posted
  message must be there exactly once). Must be 0;
* ``calls/turn``: the upstream's call count over the turns posted. Must be 1.00 (a turn that
  lost a save race would call the model again);
* ``wait p50/p99``: from posting a turn to its first event other than ``queued``: how long the
  turn waited for its session. The server answers a turn that runs at once with its first
  output, so this includes the upstream's time to first token (about nothing here);
* ``turn p50/p99``: from posting to the end of the stream;
* ``queued``: turns that waited (a ``queued`` event); ``bad``: ``conflict``, ``busy``, ``error``,
  ``retry`` and ``discarded`` events and non-200 answers. Must be 0;
* ``overlap``: the most model calls the upstream saw running at once on one session. Must be 1;
* ``CPU/turn``: the serve processes' CPU (user + system, from ``/proc``) while the turns ran,
  over the turns posted; ``cores``: how many of the machine's cores were busy meanwhile
  (``/proc/stat``: the clients, the servers, the upstream, PostgreSQL, and whatever else runs).

The first table is the headline row: 8 clients, 2 processes, 3 turns each (24) on one
session, both backends. The run exits 1 when any cell loses a turn, calls the model other
than once per turn, overlaps two calls on one session, or sees a bad event.

The machine has 2 cores shared by the clients, the server processes, the upstream and
PostgreSQL: the figures are for comparing cells of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
API_KEY = "bench-not-a-secret"
TURNS_FOR = {8: 8, 64: 2, 256: 1}  # another client count: 64 turns in all (at least one each)
BAD = ("conflict", "busy", "error", "retry", "discarded")


def turns_for(clients: int) -> int:
    return TURNS_FOR.get(clients, max(1, 64 // clients))


# -- the upstream (its own process) ---------------------------------------------------------


def _sse(data: Any) -> bytes:
    payload = data if isinstance(data, bytes) else json.dumps(data, separators=(",", ":")).encode()
    event = b"data: " + payload + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(event), event)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return _sse({"id": "chatcmpl-load", "object": "chat.completion.chunk", "created": 1718000000, "model": "m",
                 "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]})


FIRST = _chunk({"role": "assistant", "content": ""}) + _chunk({"content": "ok"})
REST = (_chunk({"content": " done"}) + _chunk({}, "stop")
        + _sse({"id": "chatcmpl-load", "object": "chat.completion.chunk", "created": 1718000000, "model": "m",
                "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}})
        + _sse(b"[DONE]") + b"0\r\n\r\n")


def _session_key(body: bytes) -> str:
    """The session a call belongs to: the first word of its first user message."""
    try:
        messages = json.loads(body).get("messages") or []
    except ValueError:
        return "?"
    for m in messages:
        if m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content).split(" ", 1)[0]
    return "?"


async def _upstream(model_s: float) -> None:
    stats = {"calls": 0, "max_overlap": 0}
    running: Counter[str] = Counter()

    async def answer(writer: asyncio.StreamWriter, status: str, body: bytes) -> None:
        writer.write(f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
                     .encode() + body)
        await writer.drain()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                line, *lines = head.decode("latin-1").split("\r\n")
                method, path = line.split(" ")[:2]
                headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines if h)}
                body = await reader.readexactly(int(headers.get("content-length") or 0))
                if method == "GET" and path == "/count":
                    await answer(writer, "200 OK", json.dumps(stats).encode())
                elif method == "POST" and path == "/reset":
                    stats["max_overlap"] = 0
                    await answer(writer, "200 OK", b"{}")
                elif method == "POST" and path.endswith("/chat/completions"):
                    stats["calls"] += 1
                    key = _session_key(body)
                    running[key] += 1
                    stats["max_overlap"] = max(stats["max_overlap"], running[key])
                    try:
                        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                                     b"transfer-encoding: chunked\r\n\r\n" + FIRST)
                        await writer.drain()
                        await asyncio.sleep(model_s)
                        writer.write(REST)
                        await writer.drain()
                    finally:
                        running[key] -= 1
                else:
                    await answer(writer, "404 Not Found", b'{"error":{"message":"no such path"}}')
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent closes stdin


def start_upstream(model_ms: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, __file__, "--upstream", "--model-ms", str(model_ms)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}"


# -- server processes and stores ------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_serves(count: int, home: str, store: str, upstream: str) -> list[tuple[subprocess.Popen[bytes], str]]:
    """Start ``count`` ``agent-core serve`` processes on ``store`` side by side; return once all answer."""
    import httpx

    started = []
    for _ in range(count):
        port = _free_port()
        args = [sys.executable, "-m", "agent_core.cli", "serve", "--quiet", "--port", str(port), "--store", store,
                "--turn-wait", "300", "--max-concurrent", "2048",
                "-c", f"base_url={upstream}/v1", "-c", f"api_key={API_KEY}", "-c", "max_retries=0"]
        log = Path(home) / f"serve-{port}.log"
        with log.open("wb") as err:
            proc = subprocess.Popen(args, env={**os.environ, "AGENT_CORE_HOME": home}, stdout=subprocess.DEVNULL,
                                    stderr=err)
        started.append((proc, f"http://127.0.0.1:{port}", log))
    deadline = time.monotonic() + 60
    for proc, url, log in started:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"agent-core serve exited: {log.read_text()}")
            try:
                httpx.get(f"{url}/healthz", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError("agent-core serve did not start") from None
                time.sleep(0.05)
    return [(proc, url) for proc, url, _ in started]


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux ``/proc``; NaN where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy() -> float:
    """CPU seconds every core of the machine has been busy so far (``/proc/stat``; NaN where there is none)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return float("nan")
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait


def stop(proc: subprocess.Popen[Any]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Postgres:
    """A throwaway PostgreSQL server (``tests/store/_postgres.py``), with room for many lease connections."""

    def __init__(self, max_connections: int) -> None:
        sys.path.insert(0, str(TESTS / "store"))
        from _postgres import PostgresServer, find_bin_dir

        bin_dir = find_bin_dir()
        if bin_dir is None:
            raise RuntimeError("no PostgreSQL server binaries (initdb) on PATH or under /usr/lib/postgresql")
        self.server = PostgresServer(bin_dir)
        self.max_connections = max_connections

    def start(self) -> str:
        s = self.server
        if s._as_postgres:
            shutil.chown(s.root, "postgres", "postgres")
        s._run("initdb", "-D", str(s.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync")
        options = (f"-p {s.port} -k {s.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                   f"-c max_connections={self.max_connections}")
        s._run("pg_ctl", "-D", str(s.data), "-o", options, "-l", str(s.root / "log"), "-w", "-t", "60", "start")
        return s.url()

    def stop(self) -> None:
        self.server.stop()


# -- one cell -------------------------------------------------------------------------------


@dataclass
class Cell:
    backend: str
    processes: int
    clients: int
    layout: str  # "one" or "many"
    turns_each: int
    posted: int = 0
    saved_events: int = 0
    stored: int = 0
    calls: int = 0
    overlap: int = 0
    wall: float = 0.0
    server_cpu: float = 0.0  # the serve processes' CPU seconds while the turns ran
    cores: float = 0.0  # the whole machine's busy CPU seconds per second while the turns ran
    waits: list[float] = field(default_factory=list)
    totals: list[float] = field(default_factory=list)
    events: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)

    @property
    def lost(self) -> int:
        return self.posted - self.stored

    @property
    def bad(self) -> int:
        return sum(self.events[t] for t in BAD) + self.events["http-error"]

    @property
    def failed(self) -> bool:
        return bool(self.lost or self.calls != self.posted or self.overlap > 1 or self.bad or self.problems)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


async def _one_turn(http: Any, url: str, sid: str, text: str, cell: Cell) -> None:
    body = {"message": text, "config": {"provider": "openai", "model": "m"}}
    started = time.perf_counter()
    waited = None
    async with http.stream("POST", f"{url}/v1/sessions/{sid}/turns", json=body) as r:
        if r.status_code != 200:
            cell.events["http-error"] += 1
            cell.problems.append(f"{sid}: HTTP {r.status_code} {(await r.aread())[:300]!r}")
            return
        async for line in r.aiter_lines():
            if not line.startswith("data:"):
                continue
            event = json.loads(line[5:])
            kind = event.get("type")
            if waited is None and kind != "queued":
                waited = time.perf_counter() - started
            if kind in BAD:
                cell.problems.append(f"{sid}: {json.dumps(event)[:300]}")
            cell.events[kind] += 1
    cell.totals.append(time.perf_counter() - started)
    if waited is not None:
        cell.waits.append(waited)


async def _run_cell(cell: Cell, urls: list[str], pids: list[int], upstream: str, tag: str) -> None:
    import httpx

    sessions = {i: f"{tag}-shared" if cell.layout == "one" else f"{tag}-c{i}" for i in range(cell.clients)}
    posted: dict[str, list[str]] = {sid: [] for sid in sessions.values()}
    limits = httpx.Limits(max_connections=cell.clients + 16, max_keepalive_connections=cell.clients + 16)
    async with httpx.AsyncClient(timeout=httpx.Timeout(600, connect=60), limits=limits) as http:
        await http.post(f"{upstream}/reset")
        calls_before = (await http.get(f"{upstream}/count")).json()["calls"]

        async def client(i: int) -> None:
            sid, url = sessions[i], urls[i % len(urls)]
            for k in range(cell.turns_each):
                text = f"{sid} turn {i}.{k}"
                posted[sid].append(text)
                cell.posted += 1
                try:
                    await _one_turn(http, url, sid, text, cell)
                except httpx.HTTPError as exc:
                    cell.events["http-error"] += 1
                    cell.problems.append(f"{sid}: {type(exc).__name__}: {exc}")

        cpu_before, machine_before = sum(cpu_seconds(pid) for pid in pids), machine_busy()
        started = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(cell.clients)))
        cell.wall = time.perf_counter() - started
        cell.server_cpu = sum(cpu_seconds(pid) for pid in pids) - cpu_before
        cell.cores = (machine_busy() - machine_before) / cell.wall
    # A new client for the checks: the turns' idle keep-alive connections may be closing by now
    # (uvicorn drops one after 5 s idle), and a GET sent on one as it closes fails.
    async with httpx.AsyncClient(timeout=60) as http:
        count = (await http.get(f"{upstream}/count")).json()
        cell.calls, cell.overlap = count["calls"] - calls_before, count["max_overlap"]
        cell.saved_events = cell.events["saved"]
        for sid, texts in posted.items():  # read every session back
            r = await http.get(f"{urls[0]}/v1/sessions/{sid}")
            if r.status_code != 200:
                cell.problems.append(f"{sid}: GET answered {r.status_code}")
                continue
            data = r.json()
            users = [m.get("content") for m in data["messages"] if m.get("role") == "user"]
            cell.stored += len(set(users) & set(texts))
            count_ok = data["revision"] == len(texts) and len(data["messages"]) == 2 * len(texts)
            if not count_ok or sorted(users) != sorted(texts):
                cell.problems.append(f"{sid}: revision {data['revision']}, {len(data['messages'])} messages, "
                                     f"{len(users)} user messages for {len(texts)} turns posted")


# -- the matrix -----------------------------------------------------------------------------


def run_group(backend: str, store: str, processes: int, cells: list[Cell], upstream: str, home: str,
              tag: str) -> None:
    servers = start_serves(processes, home, store, upstream)
    try:
        urls = [u for _, u in servers]
        for n, cell in enumerate(cells):
            try:
                pids = [proc.pid for proc, _ in servers]
                asyncio.run(_run_cell(cell, urls, pids, upstream, f"{tag}-p{processes}-{n}"))
            except Exception as exc:  # noqa: BLE001 (a cell that breaks is reported with the others)
                cell.problems.append(f"the cell stopped: {type(exc).__name__}: {exc}")
            print(f"  {row(cell)}", file=sys.stderr, flush=True)
    finally:
        for proc, _ in servers:
            proc.terminate()  # all at once, then wait for each
        for proc, _ in servers:
            stop(proc)


COLUMNS = [("backend", "<11"), ("procs", ">5"), ("clients", ">8"), ("session", ">8"), ("turns", ">6"),
           ("turns/s", ">9"), ("lost", ">5"), ("calls/turn", ">11"), ("wait p50", ">10"), ("wait p99", ">10"),
           ("turn p50", ">10"), ("turn p99", ">10"), ("queued", ">7"), ("bad", ">4"), ("overlap", ">8"),
           ("CPU/turn", ">9"), ("cores", ">6")]


def fields(c: Cell) -> list[str]:
    def ms(seconds: float) -> str:
        return f"{seconds * 1000:.0f} ms"

    return [c.backend, str(c.processes), str(c.clients), c.layout, str(c.posted),
            f"{c.saved_events / c.wall if c.wall else 0:.1f}", str(c.lost), f"{c.calls / max(c.posted, 1):.2f}",
            ms(_pct(c.waits, .5)), ms(_pct(c.waits, .99)), ms(_pct(c.totals, .5)), ms(_pct(c.totals, .99)),
            str(c.events["queued"]), str(c.bad), str(c.overlap), f"{c.server_cpu / max(c.posted, 1) * 1000:.1f} ms",
            f"{c.cores:.2f}"]


def table(cells: list[Cell], markdown: bool) -> list[str]:
    if markdown:
        lines = ["| " + " | ".join(name for name, _ in COLUMNS) + " |",
                 "|" + "|".join("---" if align.startswith("<") else "---:" for _, align in COLUMNS) + "|"]
        return lines + ["| " + " | ".join(fields(c)) + " |" + (" FAILED" if c.failed else "") for c in cells]
    return ["".join(f"{name:{align}}" for name, align in COLUMNS)] + [row(c) for c in cells]


def row(c: Cell) -> str:
    line = "".join(f"{value:{align}}" for value, (_, align) in zip(fields(c), COLUMNS, strict=True))
    return line + ("  FAILED" if c.failed else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--backends", default="sqlite,postgresql", help="comma-separated: sqlite, postgresql")
    parser.add_argument("--clients", default="8,64,256", help="comma-separated client counts")
    parser.add_argument("--processes", default="1,2", help="comma-separated numbers of serve processes")
    parser.add_argument("--model-ms", type=float, default=20.0, help="the upstream's model time per call")
    parser.add_argument("--pg-max-connections", type=int, default=1000,
                        help="PostgreSQL's max_connections (a waiting lease holds no connection, a held one does)")
    parser.add_argument("--quick", action="store_true", help="SQLite, 2 processes, 8 clients: the headline row only")
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    parser.add_argument("--upstream", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.upstream:
        asyncio.run(_upstream(args.model_ms / 1000))
        return 0
    backends = args.backends.split(",")
    clients = [int(c) for c in args.clients.split(",")]
    processes = [int(p) for p in args.processes.split(",")]
    if args.quick:
        backends, clients, processes = ["sqlite"], [], [2]
    upstream, up_url = start_upstream(args.model_ms)
    home = tempfile.mkdtemp(prefix="bench-turns-load-")
    done_rows: list[Cell] = []
    matrix: list[Cell] = []
    started = time.perf_counter()
    try:
        for backend in backends:
            pg = Postgres(args.pg_max_connections) if backend == "postgresql" else None
            store = pg.start() if pg else f"sqlite:///{home}/sessions.db"
            try:
                for procs in processes:
                    cells = []
                    if procs == 2:
                        cells.append(Cell(backend, 2, 8, "one", 3))
                        done_rows.append(cells[0])
                    grid = [Cell(backend, procs, n, layout, turns_for(n)) for n in clients
                            for layout in ("one", "many")]
                    matrix += grid
                    print(f"{backend}, {procs} process(es):", file=sys.stderr, flush=True)
                    run_group(backend, store, procs, cells + grid, up_url, home, backend[:2])
            finally:
                if pg:
                    pg.stop()
    finally:
        assert upstream.stdin is not None
        upstream.stdin.close()
        stop(upstream)
    elapsed = time.perf_counter() - started
    print(f"upstream model time {args.model_ms:g} ms per call; {os.cpu_count()} CPUs; "
          f"Python {sys.version.split()[0]}; whole run {elapsed:.0f} s\n")
    if done_rows:
        print("headline: 8 clients, 2 serve processes, 3 turns each on one session")
        print("\n".join(table(done_rows, args.markdown)))
    if matrix:
        print(f"\nthe matrix (turns per client: {', '.join(f'{n} clients {turns_for(n)}' for n in clients)})")
        print("\n".join(table(matrix, args.markdown)))
    failed = [c for c in done_rows + matrix if c.failed]
    if failed:
        print(f"\nthe store and the serve processes' logs are kept in {home}")
    else:
        shutil.rmtree(home, ignore_errors=True)
    for c in failed:
        print(f"\nFAILED: {c.backend}, {c.processes} process(es), {c.clients} clients, {c.layout} session(s): "
              f"posted {c.posted}, saved events {c.saved_events}, stored {c.stored}, model calls {c.calls}, "
              f"overlap {c.overlap}, events {dict(c.events)}")
        for p in c.problems[:5]:
            print(f"  {p}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
