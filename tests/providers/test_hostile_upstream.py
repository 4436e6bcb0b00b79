"""A hostile upstream that controls every byte, against the providers' HTTP clients.

A raw-socket server on 127.0.0.1 (:mod:`._raw`) writes exactly the bytes each
case scripts, and the case checks what a provider call makes of them: how many
requests reached the server, on which connection, and the answer or the typed
error the caller gets. Every case runs through the sync and the async client,
on agent-core's own transport and on stock httpx's (``transport: httpx``): both
must give the documented answer.

The rules these cases hold the clients to:

- **Timers belong to one read of one request.** A connection goes back to its
  pool after a stream read to its end, after a drain, after reads bounded by
  ``chunk_timeout_s``, and a new one replaces it after a cancel; whatever
  deadline those reads had, the next request on the pool waits for its answer
  as long as *its* ``timeout`` says (for ever, with ``timeout: inf``).
- **A redirect is an error, never followed**: a :class:`RedirectError` naming the
  status and the ``Location``; no other server hears from the client.
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
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from agent_core.errors import RedirectError
from agent_core_providers._routing import TRANSPORT_ENV, TRANSPORTS
from agent_core_providers.openai import OpenAIProvider

from ._driver import arun_turn, run_turn
from ._proxy import ForwardProxy, forward_proxy
from ._raw import CLOSE, DROP_UNREAD, Hold, Pause, RawServer, serving
from ._wire import OA_DONE, oa_chunk
from .conftest import run_async

KEY = "sk-hostile-0123456789abcdef"
USER = [{"role": "user", "content": "hi"}]

MODES = pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])


@pytest.fixture(autouse=True, params=TRANSPORTS)
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every case runs on both transports: agent-core's own and stock httpx's."""
    monkeypatch.setenv(TRANSPORT_ENV, request.param)
    return request.param


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


def calls(upstream: RawServer, use_async: bool, n: int, *, provider: Any = None, messages: Any = USER,
          pause: float = 0.0, **cfg: Any) -> list[Any]:
    """``n`` streamed calls one after the other on one pool: each call's text, or the error it raised.

    ``pause``: seconds between two calls.
    """
    provider = provider or OpenAIProvider()

    def outcome(turn: Any) -> Any:
        return turn.finals[0]["content"]

    if use_async:
        async def all_calls() -> list[Any]:
            out: list[Any] = []
            for i in range(n):
                if i and pause:
                    await asyncio.sleep(pause)
                try:
                    out.append(outcome(await arun_turn(provider, [], messages, config(upstream, **cfg),
                                                       request_id=f"req-{i}")))
                except Exception as exc:  # noqa: BLE001 - the outcome under test
                    out.append(exc)
            return out

        return run_async(all_calls)
    out: list[Any] = []
    for i in range(n):
        if i and pause:
            time.sleep(pause)
        try:
            out.append(outcome(run_turn(provider, [], messages, config(upstream, **cfg), request_id=f"req-{i}")))
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
    upstream.script(*[(head + events(f"a{i}") + LAST_CHUNK, Pause(close_after), CLOSE) for i in range(12)])
    with caplog.at_level(logging.DEBUG, logger="agent_core_providers"):
        outcomes = calls(upstream, use_async, 12, max_retries=2)
    assert outcomes == [f"a{i}" for i in range(12)]
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


# -- redirects: a typed error, nothing followed, no credential leaves ------------------------------------


def redirect(status: int, location: str, body: bytes = b"") -> tuple[Any, ...]:
    return (b"HTTP/1.1 %d Moved\r\nLocation: %s\r\nContent-Length: %d\r\n\r\n%s"
            % (status, location.encode(), len(body), body),)


@MODES
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "call"])
def test_a_redirect_is_a_typed_error_naming_status_and_location(upstream, use_async, status, stream):
    elsewhere = RawServer()  # where the redirect points: it must never hear from us
    try:
        target = f"{elsewhere.url}/v1/chat/completions"
        upstream.script(redirect(status, target, b'{"moved": true}'), redirect(status, target))
        provider = OpenAIProvider()
        cfg = config(upstream, max_retries=2)
        with pytest.raises(RedirectError) as caught:
            if use_async:
                run_async(arun_turn, provider, [], USER, cfg, stream=stream)
            else:
                run_turn(provider, [], USER, cfg, stream=stream)
        error = caught.value
        assert error.status_code == status and error.location == target and not error.retryable
        assert str(status) in str(error) and target in str(error)
        assert len(upstream.requests) == 1  # not retried
        assert elsewhere.accepted == 0  # not followed: the key went nowhere else
    finally:
        elsewhere.stop()


def test_an_http_base_url_sent_to_https_says_so(upstream):
    upstream.script(redirect(301, "https://api.example.test/v1/chat/completions"))
    with pytest.raises(RedirectError, match=r"301.*https://api\.example\.test/v1/chat/completions.*https:// instead of"):
        run_turn(OpenAIProvider(), [], USER, config(upstream))


def test_a_location_holding_the_key_is_scrubbed(upstream):
    upstream.script(redirect(307, f"https://evil.test/?key={KEY}"))
    with pytest.raises(RedirectError) as caught:
        run_turn(OpenAIProvider(), [], USER, config(upstream))
    assert KEY not in str(caught.value) and KEY not in (caught.value.location or "")
    assert "evil.test" in caught.value.location


# -- proxies: the environment's and the config's, as httpx applies them --------------------------------


@pytest.fixture
def proxy() -> Iterator[ForwardProxy]:
    yield from forward_proxy()


@pytest.fixture
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy variable of the machine running the tests leaks into a case."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@MODES
@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
def test_the_environments_proxy_carries_an_http_call(upstream, proxy, use_async, variable, no_proxy_env, monkeypatch):
    monkeypatch.setenv(variable, proxy.url)
    upstream.script(streamed("one"), streamed("two"))
    assert calls(upstream, use_async, 2) == ["one", "two"]
    assert proxy.asked == [f"POST {upstream.url}/v1/chat/completions HTTP/1.1"]  # one connection, kept alive
    assert upstream.conns() == [1, 1]


@MODES
def test_no_proxy_exempts_a_host(upstream, proxy, use_async, no_proxy_env, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    upstream.script(streamed("direct"))
    assert calls(upstream, use_async, 1) == ["direct"]
    assert proxy.asked == [] and upstream.conns() == [1]


@MODES
def test_the_config_proxy_is_used_and_its_password_never_shown(upstream, proxy, use_async, no_proxy_env):
    secret_proxy = proxy.url.replace("http://", "http://agent:pr0xy-s3cret-pass@")
    upstream.script(streamed("one"))
    assert calls(upstream, use_async, 1, proxy=secret_proxy) == ["one"]
    assert proxy.asked == [f"POST {upstream.url}/v1/chat/completions HTTP/1.1"]
    assert proxy.credentials and proxy.credentials[0].startswith("Basic ")  # httpx sent the proxy its credentials
    # A proxy that cannot be reached: the error says so without the password.
    proxy.stop()
    [failure] = calls(upstream, use_async, 1, proxy=secret_proxy)
    assert type(failure).__name__ == "ProviderUnavailableError"
    assert "pr0xy-s3cret-pass" not in str(failure)


@MODES
def test_https_through_the_environments_proxy_is_a_connect_tunnel(
    certificate, proxy, use_async, no_proxy_env, monkeypatch
):
    cert, key = certificate
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the clients trust the test's certificate
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    secure = RawServer(tls=context)
    try:
        secure.script(streamed("sealed"))
        assert calls(secure, use_async, 1) == ["sealed"]
        host = secure.url.removeprefix("https://")
        assert proxy.asked == [f"CONNECT {host} HTTP/1.1"]  # the proxy saw where, never what
        assert secure.requests[0][1] == b"POST /v1/chat/completions HTTP/1.1"
    finally:
        secure.stop()


def test_a_proxy_that_is_not_a_url_is_a_config_error(upstream, no_proxy_env):
    [failure] = calls(upstream, False, 1, proxy="corp-proxy:3128")
    assert type(failure).__name__ == "ConfigError" and "proxy" in str(failure)
    assert upstream.requests == []


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
