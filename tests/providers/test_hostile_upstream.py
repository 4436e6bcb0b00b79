"""A hostile upstream that controls every byte, against the providers' HTTP clients.

A raw-socket server on 127.0.0.1 (:mod:`._raw`) writes exactly the bytes each
case scripts, and the case checks what a provider call makes of them: how many
requests reached the server, on which connection, and the answer or the typed
error the caller gets. Every case runs through the sync and the async client,
on agent-core's own transport and on stock httpx's (``transport: httpx``): both
must give the documented answer. Redirects and proxies are in
``test_hostile_routes.py``; what the cases share is in :mod:`._hostile`.

The rules these cases hold the clients to:

- **Timers belong to one read of one request.** A connection goes back to its
  pool after a stream read to its end, after a drain, after reads bounded by
  ``chunk_timeout_s``, and a new one replaces it after a cancel; whatever
  deadline those reads had, the next request on the pool waits for its answer
  as long as *its* ``timeout`` says (for ever, with ``timeout: inf``).
- **A request is sent again for free only when the upstream never read it**:
  a write of it failed, or its pooled connection was seen closed before
  anything was written. A request written whole and then dropped may be
  generating, and billing, an answer upstream: sending it again is a retry
  under ``max_retries`` (``0``: exactly one request).
- **An origin that closes connections right after its answers** (without a
  ``Connection: close``) has each call on a fresh connection, sent once, with
  no retry: agent-core's pool learns that it does so instead of meeting the close.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Iterator
from typing import Any

import pytest
from agent_core_providers.openai import OpenAIProvider

from ._driver import arun_turn
from ._hostile import (  # noqa: F401 - the fixtures are used by name
    LAST_CHUNK,
    MODES,
    SSE_HEAD,
    USER,
    calls,
    cancel_when,
    chunk,
    config,
    events,
    no_proxy_env,
    streamed,
    transport,
    upstream,
)
from ._raw import CLOSE, DROP_UNREAD, Hold, Pause, RawServer
from ._wire import OA_DONE, oa_chunk
from .conftest import run_async


# -- timers belong to one read of one request --------------------------------------------------------------

#: the next answer's head comes this long after the request: past every deadline an earlier read armed
SLOW_HEAD = 0.45
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


# -- a request is sent again for free only when the upstream never read it ---------------------------------


@MODES
def test_a_request_read_then_dropped_on_a_reused_connection_is_sent_once(upstream, use_async):
    # The server answers once, then reads the second request and closes without a byte:
    # it may be generating (and billing) that answer, so with max_retries 0 nothing is sent again.
    upstream.script(streamed("one"), (CLOSE,), streamed("never"))
    outcomes = calls(upstream, use_async, 2)
    assert outcomes[0] == "one" and type(outcomes[1]).__name__ == "ProviderUnavailableError"
    assert upstream.conns() == [1, 1]


@MODES
def test_a_request_read_then_dropped_is_a_retry_that_counts(upstream, use_async, caplog):
    upstream.script(streamed("one"), (CLOSE,), streamed("two"))
    with caplog.at_level(logging.INFO, logger="agent_core_providers"):
        assert calls(upstream, use_async, 2, max_retries=1) == ["one", "two"]
    assert upstream.conns() == [1, 1, 2]
    assert [r.getMessage() for r in caplog.records if "retry 1/1" in r.getMessage()]  # counted, and said


@MODES
def test_a_request_whose_write_failed_is_sent_again_at_once(upstream, use_async, transport, caplog):
    # The server resets the connection as soon as the head is in: a long prompt cannot be
    # written whole, so the upstream never read it, and it goes again without using a retry.
    upstream.script((DROP_UNREAD,), streamed("two"))
    prompt = [{"role": "user", "content": "x" * (16 << 20)}]
    with caplog.at_level(logging.DEBUG, logger="agent_core_providers"):
        outcome = calls(upstream, use_async, 1, messages=prompt)  # max_retries 0
    assert len(upstream.unread) == 1
    assert not [r for r in caplog.records if "retry" in r.getMessage()]
    if transport == "httpx" and use_async and outcome != ["two"]:
        # Stock httpx's async stream (anyio's) raises a reset on a write only when it came before
        # the write began; one that comes while the body is being written goes unseen there, and
        # the failure is then what it looks like: a counted retry, so max_retries 0 stops here.
        assert type(outcome[0]).__name__ == "ProviderUnavailableError" and upstream.conns() == []
        return
    assert outcome == ["two"] and upstream.conns() == [2]
    assert [r for r in caplog.records if "could not be written whole" in r.getMessage()]


@MODES
def test_an_idle_connection_the_upstream_closed_is_not_used(upstream, use_async):
    upstream.script((*streamed("one"), Pause(0.05), CLOSE), streamed("two"))
    outcomes = calls(upstream, use_async, 2, pause=0.2)  # max_retries 0: no error, no second try
    assert outcomes == ["one", "two"] and upstream.conns() == [1, 2]


# -- an origin that closes the connection after its answers, without saying so ---------------------------


@MODES
@pytest.mark.parametrize("close_after", [0.0, 0.01], ids=["close-at-once", "close-10ms-later"])
def test_an_origin_that_closes_after_each_streamed_answer_is_asked_once_per_call(
        upstream, use_async, transport, close_after, caplog):
    # llama.cpp's server: a keep-alive head ("Keep-Alive: timeout=5"), a chunked stream, and
    # then its end closes the connection, microseconds to milliseconds after the last chunk.
    # Calls one after the other must not meet that close as a failure of their own, which,
    # as the upstream may have read the request, would be a retry with its backoff.
    head = SSE_HEAD.replace(b"\r\n\r\n", b"\r\nKeep-Alive: timeout=5, max=100\r\n\r\n")
    n = 12 if transport != "httpx" else 3  # stock httpx pays a backoff on most calls: three show it answers
    upstream.script(*[(head + events(f"a{i}") + LAST_CHUNK, Pause(close_after), CLOSE) for i in range(n)])
    with caplog.at_level(logging.DEBUG, logger="agent_core_providers"):
        outcomes = calls(upstream, use_async, n, max_retries=2)
    assert outcomes == [f"a{i}" for i in range(n)]
    if transport == "httpx":
        # Stock httpx reuses the connection whenever the close has not arrived yet (at once is
        # not soon enough every time); the request then meets it, and that is a counted retry
        # (the rule above): answered, at a cost.
        return
    assert upstream.conns() == list(range(1, 13))  # each asked once, each on a connection of its own
    assert not [r.getMessage() for r in caplog.records if "retry" in r.getMessage()]


@MODES
def test_an_origin_that_keeps_its_connections_has_them_reused(upstream, use_async):
    # The same calls on a server that keeps the connection: one connection carries them all
    # (the first reuse waits a moment for a close that never comes; later ones do not).
    upstream.script(*[streamed(f"a{i}") for i in range(6)])
    assert calls(upstream, use_async, 6) == [f"a{i}" for i in range(6)]
    assert upstream.conns() == [1] * 6


# -- framing ---------------------------------------------------------------------------------------------


@MODES
def test_chunk_size_lines_of_twenty_hex_digits_are_read_as_h11_reads_them(upstream, use_async):
    def long_chunk(data: bytes) -> bytes:
        return b"%020x\r\n%s\r\n" % (len(data), data)

    body = b"".join(long_chunk(e) for e in (oa_chunk({"content": "one"}), oa_chunk({}, "stop"), OA_DONE))
    upstream.script((SSE_HEAD + body + b"00000000000000000000\r\n\r\n",), streamed("two"))
    assert calls(upstream, use_async, 2) == ["one", "two"]
    assert upstream.conns() == [1, 1]  # the body was whole: its connection carried the next request


# -- TLS, cancels, timeouts, leftovers, many streams at once ---------------------------------------------


@pytest.fixture
def secure(certificate, monkeypatch: pytest.MonkeyPatch) -> Iterator[RawServer]:
    """A TLS upstream the clients trust through ``SSL_CERT_FILE``, as a private CA is trusted."""
    cert, key = certificate
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server = RawServer(tls=context)
    try:
        yield server
    finally:
        server.stop()


@MODES
def test_tls_upstream_is_verified_and_its_connection_reused(secure, use_async, no_proxy_env):
    secure.script(streamed("one"), streamed("two"))
    assert calls(secure, use_async, 2) == ["one", "two"]
    assert secure.conns() == [1, 1]


@MODES
def test_an_untrusted_certificate_is_refused_before_anything_is_sent(secure, use_async, no_proxy_env, monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE")
    [failure] = calls(secure, use_async, 1)
    assert type(failure).__name__ == "ProviderUnavailableError" and "certificate" in str(failure).lower()
    assert secure.requests == []


@MODES
def test_a_cancel_before_the_headers_closes_the_connection_at_once(upstream, use_async):
    held = upstream.event()
    upstream.script((Hold(held), *streamed("late")))  # no status line until the test ends
    provider = OpenAIProvider()
    canceller = cancel_when(upstream, provider, "req-0", 1)
    started = time.monotonic()
    [outcome] = calls(upstream, use_async, 1, provider=provider, timeout=30)
    canceller.join()
    assert type(outcome).__name__ == "ProviderRequestCancelled"
    assert time.monotonic() - started < 5.0  # not the 30 s timeout


@MODES
def test_a_silent_upstream_is_a_timeout_and_sent_once(upstream, use_async):
    held = upstream.event()
    upstream.script((Hold(held), *streamed("late")))
    [outcome] = calls(upstream, use_async, 1, timeout=0.3)
    assert type(outcome).__name__ == "LLMTimeoutError" and len(upstream.requests) == 1


@MODES
def test_a_stream_silent_past_chunk_timeout_is_retried_under_max_retries(upstream, use_async):
    held = upstream.event()
    upstream.script((SSE_HEAD, chunk(oa_chunk({"content": "one"})), Hold(held)), streamed("two"))
    assert calls(upstream, use_async, 1, chunk_timeout_s=0.3, max_retries=1) == ["two"]
    assert upstream.conns() == [1, 2]


@MODES
def test_bytes_after_a_complete_answer_never_answer_the_next_request(upstream, use_async, transport):
    if transport == "httpx":
        pytest.xfail("stock httpx (h11) keeps bytes that follow a complete response and reads them as the "
                     "next request's answer; agent-core's transport drops such a connection")
    smuggled = streamed("smuggled")[0]
    upstream.script((streamed("one")[0] + smuggled,), streamed("two"))
    assert calls(upstream, use_async, 2) == ["one", "two"]
    assert upstream.conns() == [1, 2]  # the connection that carried extra bytes went out of the pool


def test_two_hundred_concurrent_streams_each_get_their_own_answer(upstream):
    # Two hundred paced streams at once through the async pool: every answer arrives whole, to
    # its own caller (a few seconds: a thread per connection in the scripted server).
    n = 200
    upstream.script(*[(SSE_HEAD, chunk(oa_chunk({"content": f"s{i}"})), Pause(0.2),
                       chunk(oa_chunk({}, "stop")) + chunk(OA_DONE) + LAST_CHUNK) for i in range(n)])

    async def all_at_once() -> list[Any]:
        provider = OpenAIProvider()
        turns = [arun_turn(provider, [], USER, config(upstream), request_id=f"c{i}") for i in range(n)]
        return [t.finals[0]["content"] for t in await asyncio.gather(*turns)]

    answers = run_async(all_at_once)
    assert sorted(answers) == sorted(f"s{i}" for i in range(n)) and upstream.accepted == n
