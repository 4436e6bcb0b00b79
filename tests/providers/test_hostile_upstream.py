"""A hostile upstream that controls every byte, against the providers' HTTP clients.

A raw-socket server on 127.0.0.1 (:mod:`._raw`) writes exactly the bytes each
case scripts, and the case checks what a provider call makes of them: how many
requests reached the server, on which connection, and the answer or the typed
error the caller gets. Every case runs through the sync and the async client.

The rules these cases hold the clients to:

- **Timers belong to one read of one request.** A connection goes back to its
  pool after a stream read to its end, after a drain, after reads bounded by
  ``chunk_timeout_s``, and a new one replaces it after a cancel; whatever
  deadline those reads had, the next request on the pool waits for its answer
  as long as *its* ``timeout`` says (for ever, with ``timeout: inf``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from agent_core_providers.openai import OpenAIProvider

from ._driver import arun_turn, run_turn
from ._raw import Hold, Pause, RawServer, serving
from ._wire import OA_DONE, oa_chunk
from .conftest import run_async

KEY = "sk-hostile-0123456789abcdef"
USER = [{"role": "user", "content": "hi"}]

MODES = pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])


@pytest.fixture
def upstream() -> Iterator[RawServer]:
    yield from serving()


# -- the bytes an upstream sends ---------------------------------------------------------------------


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
LAST_CHUNK = b"0\r\n\r\n"


def events(text: str) -> bytes:
    """A whole answer's events, each in a chunk of its own, without the last chunk."""
    return b"".join(chunk(e) for e in (oa_chunk({"content": text}), oa_chunk({}, "stop"), OA_DONE))


def streamed(text: str) -> tuple[Any, ...]:
    """One complete streamed answer, sent at once."""
    return (SSE_HEAD + events(text) + LAST_CHUNK,)


# -- driving provider calls -----------------------------------------------------------------------------


def config(upstream: RawServer, **extra: Any) -> dict[str, Any]:
    return {"base_url": f"{upstream.url}/v1", "api_key": KEY, "model": "m", "max_retries": 0, **extra}


def calls(upstream: RawServer, use_async: bool, n: int, *, provider: Any = None, **cfg: Any) -> list[Any]:
    """``n`` streamed calls one after the other on one pool: each call's text, or the error it raised."""
    provider = provider or OpenAIProvider()

    def outcome(turn: Any) -> Any:
        return turn.finals[0]["content"]

    if use_async:
        async def all_calls() -> list[Any]:
            out: list[Any] = []
            for i in range(n):
                try:
                    out.append(outcome(await arun_turn(provider, [], USER, config(upstream, **cfg),
                                                       request_id=f"req-{i}")))
                except Exception as exc:  # noqa: BLE001 - the outcome under test
                    out.append(exc)
            return out

        return run_async(all_calls)
    out: list[Any] = []
    for i in range(n):
        try:
            out.append(outcome(run_turn(provider, [], USER, config(upstream, **cfg), request_id=f"req-{i}")))
        except Exception as exc:  # noqa: BLE001
            out.append(exc)
    return out


def cancel_when(upstream: RawServer, provider: Any, request_id: str, requests: int) -> threading.Thread:
    """Cancel ``request_id`` once the server has seen ``requests`` requests and a little time passed."""

    def run() -> None:
        for _ in range(500):
            if len(upstream.requests) >= requests:
                break
            time.sleep(0.01)
        time.sleep(0.1)
        provider.cancel_request(request_id)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


# -- timers belong to one read of one request --------------------------------------------------------------

#: the next answer's head comes this long after the request: past every deadline an earlier read armed
SLOW_HEAD = 0.6
TIMEOUTS = pytest.mark.parametrize("timeout", [float("inf"), 30.0], ids=["timeout-inf", "timeout-30"])


@MODES
@TIMEOUTS
def test_the_request_after_a_drain_waits_as_long_as_its_own_timeout(upstream, use_async, timeout):
    # The end marker, then the last chunk a little later: the client drains it (its reads capped
    # to the drain grace) and the connection goes back to the pool.
    upstream.script((SSE_HEAD + events("one"), Pause(0.05), LAST_CHUNK), (Pause(SLOW_HEAD), *streamed("two")))
    assert calls(upstream, use_async, 2, timeout=timeout) == ["one", "two"]
    assert upstream.conns() == [1, 1]  # reused, and asked once each


@MODES
@TIMEOUTS
def test_the_request_after_a_stream_bounded_by_chunk_timeout_waits_as_long_as_its_own(upstream, use_async, timeout):
    paced = (SSE_HEAD, Pause(0.05), chunk(oa_chunk({"content": "one"})), Pause(0.05),
             chunk(oa_chunk({}, "stop")) + chunk(OA_DONE) + LAST_CHUNK)
    upstream.script(paced, (Pause(SLOW_HEAD), *streamed("two")))
    assert calls(upstream, use_async, 2, timeout=timeout, chunk_timeout_s=0.3) == ["one", "two"]
    assert upstream.conns() == [1, 1]


@MODES
@TIMEOUTS
def test_the_request_after_a_cancel_waits_as_long_as_its_own_timeout(upstream, use_async, timeout):
    held = upstream.event()
    upstream.script((SSE_HEAD, chunk(oa_chunk({"content": "one"})), Hold(held)),
                    (Pause(SLOW_HEAD), *streamed("two")))
    provider = OpenAIProvider()
    canceller = cancel_when(upstream, provider, "req-0", 1)
    outcomes = calls(upstream, use_async, 2, provider=provider, timeout=timeout, chunk_timeout_s=0.3)
    canceller.join()
    assert type(outcomes[0]).__name__ == "ProviderRequestCancelled" and outcomes[1] == "two"
    assert upstream.conns() == [1, 2]  # a cancelled request's connection is never reused
