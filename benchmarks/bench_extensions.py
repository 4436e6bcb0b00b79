"""What the bundled hot-path extensions add per streamed chunk, over a pass-through extension.

    .venv/bin/python benchmarks/bench_extensions.py

Streams 5,000 chunks of ordinary prose (5-20 characters each, a typical model
delta) through the engine with an offline provider and one extension:
a pass-through extension (the baseline), ``think_tags``, ``redact`` and both.
Prints microseconds per chunk (best of 7 runs) and the difference from the
baseline; the budget is at most 1 us added per chunk. A second
table feeds a stream with a ``<think>`` block and a leaked key every 40 chunks,
where the extensions leave their fast path. Timings are from one run on a
shared machine: compare differences, not absolutes.
"""

from __future__ import annotations

import random
import time

from agent_core import AgentCore, Message
from agent_core_plugins.redact import RedactExtension
from agent_core_plugins.think_tags import ThinkTagsExtension

CHUNKS = 5000
RUNS = 7
WORDS = ("the model streams its answer in small pieces and most of them are plain words, numbers like 42, "
         "punctuation, and code such as x = f(y) + 1; nothing here is a secret or a tag").split()


def prose(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        piece = ""
        target = rng.randint(5, 20)
        while len(piece) < target:
            piece += " " + rng.choice(WORDS)
        out.append(piece[:target])
    return out


PLAIN = prose(1, CHUNKS)
MIXED = [("<th", "ink>a plan", "</think>", "key s", "k-proj-0123456789abcdefXYZ ok")[i % 5] if i % 40 < 5 else c
         for i, c in enumerate(prose(2, CHUNKS))]


def provider_for(chunks: list[str]) -> type:
    class Provider:
        name = "bench"

        def init(self, config):
            return {"config": config}

        def stream_api(self, native_messages, state, *, request_id=None):
            for c in chunks:
                yield c

        def process_chunk(self, chunk, native_messages, state):
            return [{"role": "assistant", "content": chunk}], [], native_messages, state

        def finalize(self, native_messages, state, *, context=None):
            final = {"role": "assistant", "content": "".join(chunks)}
            return [final], [*native_messages, final], state

    return Provider


class PassThrough:
    name = "pass_through"

    def process_chunk(self, chunk, partials, finals, native_messages, state):
        return partials, finals, native_messages, state


def per_chunk(chunks: list[str], extensions: list[type], enabled: list[str]) -> float:
    core = AgentCore(providers=[provider_for(chunks)], extensions=extensions)
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    config = {"enabled_plugins": enabled, "force_enabled_plugins": enabled}
    best = float("inf")
    for _ in range(RUNS):
        start = time.perf_counter()
        for _event in core.stream_request(session, config):
            pass
        best = min(best, time.perf_counter() - start)
    return best / len(chunks) * 1e6


def table(title: str, chunks: list[str]) -> None:
    rows = [
        ("pass-through", [PassThrough], []),
        ("think_tags", [ThinkTagsExtension], ["think_tags"]),
        ("redact", [RedactExtension], ["redact"]),
        ("think_tags + redact", [ThinkTagsExtension, RedactExtension], ["think_tags", "redact"]),
    ]
    print(f"\n{title}\n{'extension':<22}{'us/chunk':>10}{'added':>10}")
    base = None
    for label, exts, enabled in rows:
        us = per_chunk(chunks, exts, enabled)
        base = us if base is None else base
        print(f"{label:<22}{us:>10.2f}{us - base:>+10.2f}")


if __name__ == "__main__":
    table("plain prose (5-20 characters per chunk)", PLAIN)
    table("a <think> block and a key every 40 chunks", MIXED)
