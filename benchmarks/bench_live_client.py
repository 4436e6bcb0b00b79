"""Client CPU per streamed chunk on a live model stream: plain httpx, agent-core, the openai client.

All three read the same stream from a real ``llama-server`` (Gemma 3 270M,
greedy decoding, a fixed seed and ``max_tokens``, so every run gets the same
chunks) and are charged only their own process's CPU (``time.process_time``;
the server is another process):

* ``httpx + json.loads``: ``httpx.Client.stream`` + ``iter_lines`` + ``json.loads``
  on each ``data:`` line, nothing else: the floor for a Python client;
* ``agent-core``: ``AgentCore.stream_request`` with the ``openai`` provider
  (and its default extensions), every event consumed;
* ``openai``: the official client's ``chat.completions.create(stream=True)``.

Chunks arrive one by one as the model produces them, so each costs a network
read and a parse, unlike a loopback benchmark that hands over a recorded body
in large reads. The figure reported is CPU per chunk, median over the rounds.

Run (the ``openai`` package is only for this comparison, never a dependency
of the project; install it into a separate environment)::

    python3 -m venv /tmp/bench-venv
    /tmp/bench-venv/bin/pip install -q -e '.[test-live]' openai
    /tmp/bench-venv/bin/python benchmarks/bench_live_client.py            # about a minute
    /tmp/bench-venv/bin/python benchmarks/bench_live_client.py --quick    # smoke run
    /tmp/bench-venv/bin/python benchmarks/bench_live_client.py --profile  # + cProfile of agent-core

Without ``openai`` installed its row is left out. ``--url`` uses a server
that is already running instead of starting one.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent_core import AgentCore, Message  # noqa: E402
from agent_core_providers.clients import close_clients  # noqa: E402

PROMPT = "Write a long story about a lighthouse keeper and his cat."
MODEL = "gemma-3-270m"

Runner = Callable[[], int]


def plain_httpx(base: str, max_tokens: int) -> Runner:
    client = httpx.Client(timeout=120)
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }

    def run() -> int:
        chunks = 0
        with client.stream("POST", base + "/chat/completions", json=body) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    json.loads(line[6:])
                    chunks += 1
        return chunks

    return run


def agent_core(base: str, max_tokens: int) -> Runner:
    core = AgentCore.discover()
    session = core.add_message(core.create_session(), Message(role="user", content=PROMPT))
    config = {"provider": "openai", "base_url": base, "model": MODEL, "max_tokens": max_tokens, "temperature": 0}

    def run() -> int:
        partials = 0
        for event in core.stream_request(session, config):
            if event.type == "partial":
                partials += 1
            elif event.type == "done" and not event.outcome.ok:
                raise RuntimeError(f"agent-core request failed: {event.outcome}")
        return partials

    return run


def openai_client(base: str, max_tokens: int) -> Runner | None:
    try:
        import openai
    except ImportError:
        return None
    client = openai.OpenAI(base_url=base, api_key="unused", max_retries=0)

    def run() -> int:
        chunks = 0
        stream = client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": PROMPT}],
            max_tokens=max_tokens,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        )
        for _ in stream:
            chunks += 1
        return chunks

    return run


def measure(run: Runner) -> tuple[float, int]:
    """CPU seconds of one run, and how many chunks it read."""
    start = time.process_time()
    chunks = run()
    return time.process_time() - start, chunks


def bench(base: str, max_tokens: int, rounds: int) -> dict[str, tuple[float, int]]:
    runners: dict[str, Runner] = {
        "httpx + json.loads": plain_httpx(base, max_tokens),
        "agent-core": agent_core(base, max_tokens),
    }
    official = openai_client(base, max_tokens)
    if official is not None:
        runners["openai client"] = official
    for run in runners.values():  # warm-up: imports, connection pools, the server's prompt cache
        run()
    # The server sends the same chunks every round; count them with the plain client so
    # every row divides by the same number (agent-core reports text partials, not wire chunks).
    samples: dict[str, list[float]] = {name: [] for name in runners}
    wire_chunks = 0
    for _ in range(rounds):
        for name, run in runners.items():  # interleaved, so drift in machine load hits all alike
            cpu, chunks = measure(run)
            samples[name].append(cpu)
            if name == "httpx + json.loads":
                wire_chunks = chunks
    return {name: (statistics.median(cpu) / wire_chunks, wire_chunks) for name, cpu in samples.items()}


_GROUPS = (
    ("agent_core_plugins", "agent-core extensions (openai_tools, openai_reasoning)"),
    ("agent_core_providers", "agent-core openai provider + SSE reader"),
    ("agent_core", "agent-core engine (pipeline, effects, frozen values)"),
    ("httpcore", "httpx / httpcore / h11 (HTTP reads)"),
    ("h11", "httpx / httpcore / h11 (HTTP reads)"),
    ("httpx", "httpx / httpcore / h11 (HTTP reads)"),
)


def _group(filename: str) -> str:
    for needle, label in _GROUPS:
        if f"/{needle}/" in filename:
            return label
    if filename == "~":
        return "built-ins (socket recv, decoders, ...)"
    return "other (stdlib)"


def profile_agent_core(base: str, max_tokens: int) -> str:
    """Three agent-core streams under cProfile (CPU clock): own time by layer, then the top functions."""
    run = agent_core(base, max_tokens)
    run()
    profiler = cProfile.Profile(time.process_time)  # CPU time: waiting in recv costs nothing
    profiler.enable()
    for _ in range(3):
        run()
    profiler.disable()
    stats = pstats.Stats(profiler)
    by_layer: dict[str, float] = {}
    for (filename, _, _), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        label = _group(filename)
        by_layer[label] = by_layer.get(label, 0.0) + own
    total = sum(by_layer.values()) or 1.0
    lines = ["| layer | share of agent-core's CPU |", "|---|---:|"]
    for label, own in sorted(by_layer.items(), key=lambda item: -item[1]):
        lines.append(f"| {label} | {100 * own / total:.0f} % |")
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(16)
    return "\n".join(lines) + "\n\n" + out.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="root of a running llama-server (default: start one)")
    parser.add_argument("--max-tokens", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="smoke run: 32 tokens, 1 round")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of agent-core's runs")
    args = parser.parse_args()
    if args.quick:
        args.max_tokens, args.rounds = 32, 1

    server = None
    if args.url is None:
        from tests.live._llama import start_server

        log = Path(tempfile.mkdtemp(prefix="bench-llama-")) / "server.log"
        server = start_server(log, slots=1, ctx_per_slot=2048, seed=42)
        url = server.url
    else:
        url = args.url.rstrip("/")
    try:
        results = bench(url + "/v1", args.max_tokens, args.rounds)
        profile = profile_agent_core(url + "/v1", args.max_tokens) if args.profile else None
    finally:
        close_clients()
        if server is not None:
            server.stop()

    base, chunks = results["httpx + json.loads"]
    print(f"{chunks} chunks per stream, max_tokens={args.max_tokens}, median of {args.rounds} rounds\n")
    print("| client | CPU per chunk | vs httpx |")
    print("|---|---:|---:|")
    for name, (per_chunk, _) in results.items():
        print(f"| {name} | {per_chunk * 1e6:.0f} µs | {per_chunk / base:.2f}x |")
    ours = results["agent-core"][0]
    print()
    print(f"agent-core within 1.1x of httpx: {'yes' if ours <= 1.1 * base else 'no'} ({ours / base:.2f}x)")
    if "openai client" in results:
        theirs = results["openai client"][0]
        print(f"agent-core at most half the openai client's: {'yes' if ours <= 0.5 * theirs else 'no'} "
              f"({ours / theirs:.2f}x)")
    if profile:
        print("\ncProfile of agent-core (3 streams, CPU clock; profiling overhead inflates the figures):\n")
        print(profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
