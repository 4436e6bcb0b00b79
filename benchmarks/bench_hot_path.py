"""Per-chunk cost of the hot path against the length of the conversation.

    .venv/bin/python benchmarks/bench_hot_path.py

Streams 2,000 chunks through a provider and two extensions for sessions of
10, 1,000 and 10,000 messages, and prints microseconds per chunk plus the
ratio to the shortest session. The engine never copies or re-freezes a
history a plugin hands back unchanged, so the ratio should stay near 1.0;
timings are from one run on a noisy machine, so compare ratios, not absolutes.
"""

from __future__ import annotations

import time

from agent_core import AgentCore, Message, Session

CHUNKS = 2000


class Provider:
    name = "bench"

    def init(self, config):
        return {"config": config, "n": 0}

    def stream_api(self, native_messages, state, *, request_id=None):
        for i in range(CHUNKS):
            yield {"delta": "x"}

    def process_chunk(self, chunk, native_messages, state):
        return [{"role": "assistant", "content": chunk["delta"]}], [], native_messages, {**state, "n": state["n"] + 1}

    def finalize(self, native_messages, state, *, context=None):
        final = {"role": "assistant", "content": "x" * state["n"]}
        return [final], [*native_messages, final], state


class Observer:
    name = "observer"

    def process_chunk(self, chunk, partials, finals, native_messages, state):
        return partials, finals, native_messages, state


class Counter:
    name = "counter"
    priority = 200

    def process_chunk(self, chunk, partials, finals, native_messages, state):
        return partials, finals, native_messages, {**state, "seen": state.get("seen", 0) + 1}


def per_chunk_us(history: int) -> float:
    messages = [Message("user" if i % 2 == 0 else "assistant", f"message {i}") for i in range(history)]
    session = Session("bench", messages)
    core = AgentCore(providers=[Provider], extensions=[Observer, Counter])
    core.request(session, {"stream": True})  # warm up: builds and stores the native history
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        stream_start = None
        for ev in core.stream_request(session):
            if ev.type == "partial" and stream_start is None:
                stream_start = time.perf_counter()
        t1 = time.perf_counter()
        best = min(best, (t1 - (stream_start or t0)) / CHUNKS * 1e6)
    return best


def main() -> None:
    base = None
    print(f"{'messages':>9} {'us/chunk':>9} {'ratio':>6}")
    for n in (10, 1_000, 10_000):
        us = per_chunk_us(n)
        base = base or us
        print(f"{n:>9} {us:>9.2f} {us / base:>6.2f}")


if __name__ == "__main__":
    main()
