"""What ``agent-core serve`` costs a client: facade overhead per chunk, and turns per second.

    .venv/bin/python benchmarks/bench_server.py            # 5,000 chunks, 5 rounds, 5 s of turns
    .venv/bin/python benchmarks/bench_server.py --quick    # a smoke run: does every part work?

1. **Facade overhead.** The upstream is ``bench_providers.py``'s loopback server, in its own
   process, streaming ``--chunks`` OpenAI Chat Completions deltas as fast as it can. The official
   ``openai`` client streams the same request twice per round: straight to the upstream, and
   through ``agent-core serve`` (another process, ``model="openai/gpt-4o-mini"``), which runs
   the request through the engine (the ``openai`` provider and its extensions, the bundled
   ones that are on by default) and writes each partial back as a ``chat.completion.chunk``.
   The table gives the client's wall time per chunk (median over rounds), the difference
   (what the facade adds per chunk), and the server process's own CPU per chunk (read from
   ``/proc``). Every client's accumulated text is compared with what the upstream sent.
2. **Turns per second.** Non-streamed ``echo`` requests through ``/v1/chat/completions`` with
   ``X-Session-Id`` (each one loads the session from the store, runs, saves the next
   revision), from 8 client threads, each on its own session, for ``--seconds``; once with
   one ``agent-core serve`` process, once with four sharing one SQLite store, the threads
   spread over them. Every reply is checked.

The machine is shared and has 2 cores: compare ratios within one run, not absolutes; with four
server processes on two cores the processes compete for CPU with the clients.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
API_KEY = "bench-not-a-secret"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_upstream(chunks: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, str(HERE / "bench_providers.py"), "--serve", "--chunks", str(chunks)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}"


def start_serve(home: str, *config: str) -> tuple[subprocess.Popen[bytes], str]:
    return _ready(*_launch(home, *config))


def _launch(home: str, *config: str) -> tuple[subprocess.Popen[bytes], str]:
    """``agent-core serve`` started, not yet listening (several start side by side; see :func:`_ready`)."""
    port = _free_port()
    args = [sys.executable, "-m", "agent_core.cli", "serve", "--quiet", "--port", str(port)]  # no access lines: stderr is a pipe read only on failure
    for item in config:
        args += ["-c", item]
    proc = subprocess.Popen(args, env={**os.environ, "AGENT_CORE_HOME": home},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return proc, f"http://127.0.0.1:{port}"


def _ready(proc: subprocess.Popen[bytes], url: str) -> tuple[subprocess.Popen[bytes], str]:
    """``proc`` once it answers ``/healthz``."""
    import httpx

    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"agent-core serve exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            httpx.get(f"{url}/healthz", timeout=1)
            return proc, url
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise RuntimeError("agent-core serve did not start") from None
            time.sleep(0.1)


def stop(proc: subprocess.Popen[Any]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux ``/proc``; NaN where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stream_once(client: Any, model: str) -> tuple[str, float]:
    """One streamed completion with the official client: (text, wall seconds)."""
    started = time.perf_counter()
    parts = []
    for chunk in client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Count."}],
                                                stream=True):
        if chunk.choices and chunk.choices[0].delta.content:
            parts.append(chunk.choices[0].delta.content)
    return "".join(parts), time.perf_counter() - started


def facade_table(chunks: int, rounds: int) -> dict[str, float]:
    import openai

    sys.path.insert(0, str(HERE))
    from bench_providers import expected_text

    want = expected_text(chunks)
    upstream, up_url = start_upstream(chunks)
    home = tempfile.mkdtemp(prefix="bench-serve-")
    serve, url = start_serve(home, f"base_url={up_url}/v1", f"api_key={API_KEY}", "max_retries=0")
    try:
        direct = openai.OpenAI(base_url=f"{up_url}/v1", api_key=API_KEY, max_retries=0)
        facade = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        for client, model in ((direct, "gpt-4o-mini"), (facade, "openai/gpt-4o-mini")):  # warm up
            text, _ = stream_once(client, model)
            if text != want:
                raise AssertionError(f"{model}: the text differs from what the upstream sent")
        walls: dict[str, list[float]] = {"direct": [], "facade": []}
        server_cpu: list[float] = []
        for _ in range(rounds):
            text, wall = stream_once(direct, "gpt-4o-mini")
            assert text == want, "direct: wrong text"
            walls["direct"].append(wall)
            before = cpu_seconds(serve.pid)
            text, wall = stream_once(facade, "openai/gpt-4o-mini")
            server_cpu.append(cpu_seconds(serve.pid) - before)
            assert text == want, "facade: wrong text"
            walls["facade"].append(wall)
    finally:
        stop(serve)
        upstream.stdin.close()  # type: ignore[union-attr]
        stop(upstream)
    per = {k: statistics.median(v) / chunks * 1e6 for k, v in walls.items()}
    per["added"] = per["facade"] - per["direct"]
    per["server_cpu"] = statistics.median(server_cpu) / chunks * 1e6
    return per


def turns_per_second(processes: int, seconds: float, threads: int = 8) -> float:
    import httpx

    home = tempfile.mkdtemp(prefix="bench-turns-")
    launched = [_launch(home) for _ in range(processes)]  # started side by side, then waited for
    servers = [_ready(proc, url) for proc, url in launched]
    done = [0] * threads
    errors: list[str] = []
    stop_at = time.monotonic() + seconds

    def client(i: int) -> None:
        url = servers[i % processes][1]
        with httpx.Client(timeout=30) as http:
            n = 0
            while time.monotonic() < stop_at:
                r = http.post(f"{url}/v1/chat/completions", headers={"x-session-id": f"bench-{processes}-{i}"},
                              json={"model": "echo", "messages": [{"role": "user", "content": f"turn {n}"}]})
                if r.status_code != 200 or r.json()["choices"][0]["message"]["content"] != f"Echo: turn {n}":
                    errors.append(f"{r.status_code} {r.text[:200]}")
                    return
                n += 1
            done[i] = n

    try:
        started = time.monotonic()
        workers = [threading.Thread(target=client, args=(i,)) for i in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        elapsed = time.monotonic() - started
    finally:
        for proc, _ in servers:
            stop(proc)
    if errors:
        raise AssertionError(f"a turn failed: {errors[0]}")
    return sum(done) / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0, help="how long each turns-per-second run lasts")
    parser.add_argument("--quick", action="store_true", help="200 chunks, one round, 1 s of turns")
    args = parser.parse_args(argv)
    if args.quick:
        args.chunks, args.rounds, args.seconds = 200, 1, 1.0
    per = facade_table(args.chunks, args.rounds)
    print(f"facade overhead, {args.chunks:,} chunks, median of {args.rounds} round(s) (official openai client)")
    print(f"{'path':<34}{'wall us/chunk':>14}")
    print(f"{'openai client -> upstream':<34}{per['direct']:>14.1f}")
    print(f"{'openai client -> serve -> upstream':<34}{per['facade']:>14.1f}")
    print(f"{'added by the facade':<34}{per['added']:>14.1f}   ({per['facade'] / per['direct']:.2f}x)")
    print(f"{'serve process CPU':<34}{per['server_cpu']:>14.1f}")
    print(f"\nnon-streamed echo turns with X-Session-Id, 8 client threads, {args.seconds:g} s each, one SQLite store")
    rates = {}
    for processes in (1, 4):
        rates[processes] = turns_per_second(processes, args.seconds)
        print(f"{processes} server process(es): {rates[processes]:8.1f} turns/s")
    print(f"4 processes / 1 process: {rates[4] / rates[1]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
