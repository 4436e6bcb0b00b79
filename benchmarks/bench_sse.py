"""SSE parsing on the hot path: httpx-sse versus agent_core_providers._sse.

Streams the same recorded bodies (OpenAI Chat Completions chunks and
Anthropic Messages events, cut into 1 KiB network reads) through an
``httpx.Response`` and decodes every event's JSON, three ways:

* httpx-sse's ``EventSource.iter_sse`` + ``json.loads`` (the usual recipe);
* httpx-sse + ``msgspec.json.Decoder`` (same JSON decoder as ours);
* our ``JSONEventReader`` (bytes split once per read + msgspec).

Run: ``.venv/bin/python benchmarks/bench_sse.py`` (httpx-sse is not a
dependency; install it to compare: ``.venv/bin/pip install httpx-sse``).
Prints events/s for each path and the ratios; the figures are quoted in the
docstring of ``agent_core_providers/_sse.py``. Then one huge line (20 MB and
50 MB of ``data:`` in 64 KiB reads) through our decoder, in seconds: the work
must grow linearly with the line (joining the tail to every read made it
quadratic: ~3 s and ~20 s before).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import msgspec
from agent_core_providers._sse import JSONEventReader

EVENTS = 20_000
READ_SIZE = 1024


def openai_body(n: int) -> bytes:
    chunk = {
        "id": "chatcmpl-abc123",
        "object": "chat.completion.chunk",
        "created": 1718000000,
        "model": "gpt-4o-mini",
        "system_fingerprint": "fp_0123",
        "choices": [{"index": 0, "delta": {"content": " token"}, "logprobs": None, "finish_reason": None}],
    }
    line = b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"
    return line * n + b"data: [DONE]\n\n"


def anthropic_body(n: int) -> bytes:
    event = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " token"}}
    one = b"event: content_block_delta\ndata: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n"
    return one * n + b'event: message_stop\ndata: {"type":"message_stop"}\n\n'


def response(body: bytes) -> httpx.Response:
    def reads() -> Iterator[bytes]:
        for i in range(0, len(body), READ_SIZE):
            yield body[i : i + READ_SIZE]

    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=reads())


def with_httpx_sse(loads: Callable[[str], Any]) -> Callable[[bytes], int]:
    from httpx_sse import EventSource

    def run(body: bytes) -> int:
        n = 0
        for event in EventSource(response(body)).iter_sse():
            if event.data != "[DONE]":
                loads(event.data)
                n += 1
        return n

    return run


def with_ours(body: bytes) -> int:
    reader = JSONEventReader("bench", lambda name, value: None, done_data=b"[DONE]")
    n = 0
    for raw in response(body).iter_bytes():
        n += len(reader.feed(raw))
    return n


def best_rate(run: Callable[[bytes], int], body: bytes, repeats: int = 5) -> float:
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        n = run(body)
        best = max(best, n / (time.perf_counter() - start))
    return best


def main() -> None:
    decoder = msgspec.json.Decoder()
    paths: dict[str, Callable[[bytes], int]] = {}
    try:
        paths["httpx-sse + json.loads"] = with_httpx_sse(json.loads)
        paths["httpx-sse + msgspec"] = with_httpx_sse(decoder.decode)
    except ImportError:
        print("httpx-sse is not installed: measuring our decoder only")
    paths["agent_core_providers._sse"] = with_ours

    bodies = {"openai": openai_body(EVENTS), "anthropic": anthropic_body(EVENTS)}
    rates = {(p, b): best_rate(run, body) for p, run in paths.items() for b, body in bodies.items()}
    print(f"{EVENTS} events per body, {READ_SIZE} B reads, best of 5")
    print(f"{'path':<30}{'openai ev/s':>14}{'anthropic ev/s':>17}")
    for p in paths:
        print(f"{p:<30}{rates[(p, 'openai')]:>14,.0f}{rates[(p, 'anthropic')]:>17,.0f}")
    ours = "agent_core_providers._sse"
    for p in paths:
        if p != ours:
            print(
                f"ratio ours / {p}: openai {rates[(ours, 'openai')] / rates[(p, 'openai')]:.2f}x, "
                f"anthropic {rates[(ours, 'anthropic')] / rates[(p, 'anthropic')]:.2f}x"
            )


def long_line(size: int, read: int = 65536) -> float:
    """Seconds for our decoder to take one ``size``-byte data line in ``read``-byte reads."""
    body = b"data: " + b"a" * size
    reader = JSONEventReader("bench", lambda name, value: None)
    reader._sse.max_line = 2 * size  # measure the work, not the 16 MiB refusal
    start = time.perf_counter()
    for i in range(0, len(body), read):
        reader.feed(body[i : i + read])
    reader._sse.feed(b"\n\n")  # the SSE layer only: the JSON decode of 20 MB of "a" would fail anyway
    return time.perf_counter() - start


def main_long_lines() -> None:
    for mb in (20, 50):
        seconds = long_line(mb * 1_000_000)
        print(f"one {mb} MB line in 64 KiB reads: {seconds:.3f}s ({mb / seconds:,.0f} MB/s)")


if __name__ == "__main__":
    main()
    main_long_lines()
