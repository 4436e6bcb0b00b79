"""A pooled client's request handed straight to its pool (``_direct``), against httpx's own path as the oracle.

The same pooled client sends each call twice, once by its route and once
through ``httpx.Client.send``, to a raw-socket server on 127.0.0.1 that keeps
every request's bytes: the two must be identical, for any headers a provider
may send (hypothesis draws them, names that clash with httpx's own included).
The answer, the errors and the log line must be the ones httpx gives too,
sync and async.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from typing import Any

import httpx
import pytest
from agent_core.plugin_kit import drive_async, drive_sync
from agent_core_providers._call import HTTPCall, build_request
from agent_core_providers._direct import TRANSPORT_ERRORS, as_httpx, direct_chunks
from agent_core_providers._exchange import Exchange
from agent_core_providers._inflight import InFlightTable
from agent_core_providers._oneshot import answer_flow
from agent_core_providers._pool import ROUTE, aclose_clients, async_client_for, close_clients, sync_client_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .test_lean_conn import CHUNKED_HEAD, CLOSE, SIZED, Hold, RawServer, server  # noqa: F401 - the fixture

#: this module tests agent-core's own transport (tests/providers/conftest.py)
OUR_TRANSPORT_ONLY = True

JSON = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{"answer": 1}'
KEY = "sk-direct-0123456789"

#: header names a provider sends, and ones httpx sets itself in other cases
NAMES = ["Authorization", "authorization", "Content-Type", "content-type", "Accept", "accept", "User-Agent",
         "user-agent", "Connection", "Accept-Encoding", "x-api-key", "anthropic-version", "X-Trace"]
VALUES = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=24)


def _call(url: str, headers: dict[str, str], body: bytes = b'{"model": "m"}', method: str = "POST") -> HTTPCall:
    return HTTPCall(provider="openai", url=url + "/v1/chat/completions", body=body, headers=headers,
                    secrets=(KEY,), method=method, max_retries=0)


def _by_httpx(client: httpx.Client, call: HTTPCall) -> bytes:
    response = client.send(build_request(client, call), stream=True)
    try:
        return response.read()
    finally:
        response.close()


def _by_route(client: httpx.Client, call: HTTPCall) -> bytes:
    route = getattr(client, ROUTE)
    request = route.request(call.method, call.url, call.headers, call.body)
    assert request is not None
    response = route.send(request)
    try:
        return b"".join(direct_chunks(response))
    except TRANSPORT_ERRORS as exc:  # as the streamed attempt maps a read straight from the connection
        raise as_httpx(exc) from exc
    finally:
        response.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(headers=st.dictionaries(st.sampled_from(NAMES), VALUES, max_size=6), body=st.binary(min_size=1, max_size=300))
def test_a_route_writes_the_bytes_httpx_writes(server: RawServer, headers: dict[str, str], body: bytes) -> None:
    client = sync_client_for(server.url, 10.0)
    call = _call(server.url, headers, body)
    route = getattr(client, ROUTE)
    unique = len({name.lower() for name in headers}) == len(headers)
    assert (route.request(call.method, call.url, call.headers, call.body) is not None) == unique
    server.script(SIZED, SIZED)
    assert _by_httpx(client, call) == b"hello world"
    if unique:
        assert _by_route(client, call) == b"hello world"
    else:  # two spellings of one name: httpx joins them, the route leaves the call to httpx
        assert _by_httpx(client, call) == b"hello world"
    assert server.wire[-1] == server.wire[-2]
    assert body in server.wire[-1]


# -- through the exchange, both modes ----------------------------------------------------------


def _spied(client: Any) -> list[Any]:
    """``client``'s real ``send``, counted (a spy: every call still goes through httpx)."""
    sent: list[Any] = []
    real = client.send

    def send(request: Any, **kwargs: Any) -> Any:
        sent.append(request)
        return real(request, **kwargs)

    client.send = send
    return sent


def _answer(mode: str, url: str, call: HTTPCall) -> tuple[Any, int]:
    """The one-shot answer of ``call`` through a pooled client, and how many requests went through httpx."""
    table = InFlightTable()
    if mode == "sync":
        client = sync_client_for(url, 10.0)
        sent = _spied(client)
        try:
            with Exchange(client, call, table.open("r"), table.close) as exchange:
                [answer] = drive_sync(answer_flow(exchange))
            return answer, len(sent)
        finally:
            close_clients()

    async def main() -> tuple[Any, int]:
        client = async_client_for(url, 10.0)
        sent = _spied(client)
        try:
            async with Exchange(client, call, table.open("r"), table.close) as exchange:
                [answer] = [a async for a in drive_async(answer_flow(exchange))]
            return answer, len(sent)
        finally:
            await aclose_clients()

    return asyncio.run(main())


modes = pytest.mark.parametrize("mode", ["sync", "async"])


@modes
def test_pooled_clients_send_a_post_by_their_route(mode: str, server: RawServer) -> None:
    server.script(JSON)
    answer, through_httpx = _answer(mode, server.url, _call(server.url, {"Authorization": f"Bearer {KEY}"}))
    assert answer == {"answer": 1}
    assert through_httpx == 0
    assert server.wire[0].startswith(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:")


@modes
@pytest.mark.parametrize(("headers", "method", "body"), [
    ({"Host": "elsewhere.example"}, "POST", b"{}"),
    ({"Content-Length": "2"}, "POST", b"{}"),
    ({"X-A": "1", "x-a": "2"}, "POST", b"{}"),
    ({}, "POST", b""),
    ({}, "GET", b""),
], ids=["host", "content-length", "one-name-twice", "empty-body", "get"])
def test_what_a_route_leaves_to_httpx_still_goes(mode: str, server: RawServer, headers: dict[str, str],
                                                  method: str, body: bytes) -> None:
    server.script(JSON)
    answer, through_httpx = _answer(mode, server.url, _call(server.url, headers, body, method))
    assert answer == {"answer": 1}
    assert through_httpx == 1


# -- errors are httpx's ----------------------------------------------------------------------


def _both(mode: str, url: str, timeout: float, use_route: bool, call: HTTPCall) -> BaseException:
    """The error that sending and reading ``call`` raises, by the route or through httpx."""

    def sync() -> BaseException:
        client = sync_client_for(url, timeout)
        try:
            (_by_route if use_route else _by_httpx)(client, call)
        except Exception as exc:  # noqa: BLE001 - the error is the result
            return exc
        finally:
            close_clients()
        raise AssertionError("no error")

    async def run_async() -> BaseException:
        client = async_client_for(url, timeout)
        try:
            if use_route:
                route = getattr(client, ROUTE)
                response = await route.asend(route.request(call.method, call.url, call.headers, call.body))
                try:
                    async for _ in direct_chunks(response):
                        pass
                except TRANSPORT_ERRORS as exc:
                    raise as_httpx(exc) from exc
                finally:
                    await response.aclose()
            else:
                response = await client.send(build_request(client, call), stream=True)
                try:
                    await response.aread()
                finally:
                    await response.aclose()
        except Exception as exc:  # noqa: BLE001
            return exc
        finally:
            await aclose_clients()
        raise AssertionError("no error")

    return sync() if mode == "sync" else asyncio.run(run_async())


def _closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@modes
@pytest.mark.parametrize("fault", ["refused", "cut-short", "stalled", "malformed"])
def test_a_route_raises_the_error_httpx_raises(mode: str, server: RawServer, fault: str) -> None:
    errors = []
    refused = _closed_port()
    for use_route in (False, True):
        url, timeout = server.url, 10.0
        if fault == "refused":
            url = refused
        elif fault == "cut-short":
            server.script((CHUNKED_HEAD + b"5\r\nhel", CLOSE))
        elif fault == "stalled":
            server.script((CHUNKED_HEAD, Hold(server.event())))
            timeout = 0.3
        else:
            server.script((b"HTTP/1.1 200 OK\r\nContent-Length: nope\r\n\r\n", CLOSE))
        errors.append(_both(mode, url, timeout, use_route, _call(url, {"Authorization": f"Bearer {KEY}"})))
    by_httpx, by_route = errors
    assert type(by_route) is type(by_httpx)
    assert isinstance(by_route, httpx.TransportError)
    assert str(by_route) == str(by_httpx)
    expected = {"refused": httpx.ConnectError, "cut-short": httpx.RemoteProtocolError,
                "stalled": httpx.ReadTimeout, "malformed": httpx.RemoteProtocolError}[fault]
    assert isinstance(by_route, expected)


@modes
def test_a_route_logs_each_request_as_httpx_does(mode: str, server: RawServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="httpx")
    lines: list[list[str]] = []
    for through in ("httpx", "route"):
        server.script(JSON)
        headers = {"Authorization": f"Bearer {KEY}"} if through == "route" else {"Host": server.url[7:]}
        caplog.clear()
        _answer(mode, server.url, _call(server.url, headers))
        lines.append([r.getMessage() for r in caplog.records if r.name == "httpx"])
    assert lines[0] == lines[1] == [f'HTTP Request: POST {server.url}/v1/chat/completions "HTTP/1.1 200 OK"']
    assert KEY not in caplog.text


def test_a_template_is_learnt_once_per_url_and_names_from_many_threads(server: RawServer) -> None:
    client = sync_client_for(server.url, 10.0)
    route = getattr(client, ROUTE)
    call = _call(server.url, {"Authorization": f"Bearer {KEY}"})
    made: list[Any] = []
    barrier = threading.Barrier(8)

    def make(_: int) -> None:
        barrier.wait()
        made.append(route.request(call.method, call.url, call.headers, call.body))

    threads = [threading.Thread(target=make, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 8 and all(r is not None for r in made)
    assert len({tuple(r.headers) for r in made}) == 1
    assert all(r.extensions is not made[0].extensions for r in made[1:])  # each request its own timeouts
    close_clients()

