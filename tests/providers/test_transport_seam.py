"""agent-core's transport behind httpx's public seam, answer for answer against stock httpx (h11) as the oracle.

Each case is the exact bytes a server on 127.0.0.1 answers; the same request goes
through ``httpx.Client(transport=LeanTransport())`` and through a stock
``httpx.Client()`` (httpcore and h11), and both must give the same status,
headers and body, or both refuse it with the same kind of httpx error.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from agent_core_providers._pool import close_clients, send, sync_client_for
from agent_core_providers.transport import LeanTransport

from ._raw import CLOSE, RawServer, serving

CASES = {
    "sized": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    "chunked with extensions and trailers": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                             b"5;x=1\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n"),
    "twenty-digit chunk size": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                b"00000000000000000005\r\nhello\r\n0\r\n\r\n"),
    "1xx first": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    "obs-fold": b"HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 2\r\n\r\nok",
    "http/1.0 until close": (b"HTTP/1.0 200 OK\r\n\r\nall of it", CLOSE),
    "204 without body": b"HTTP/1.1 204 No Content\r\n\r\n",
    "redirect": b"HTTP/1.1 307 Temporary Redirect\r\nLocation: https://elsewhere/\r\nContent-Length: 0\r\n\r\n",
    "bad status line": (b"HTTP/1.1 two hundred OK\r\n\r\n", CLOSE),
    "conflicting lengths": (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", CLOSE),
    "body cut short": (b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nhello", CLOSE),
    "not chunked encoding": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nhello", CLOSE),
}


#: what stock httpx (h11) makes of each case: the oracle's answer (status and body), or its error
EXPECTED: dict[str, Any] = {
    "sized": (200, b"hello"),
    "chunked with extensions and trailers": (200, b"hello"),
    "twenty-digit chunk size": (200, b"hello"),
    "1xx first": (200, b"ok"),
    "obs-fold": (200, b"ok"),
    "http/1.0 until close": (200, b"all of it"),
    "204 without body": (204, b""),
    "redirect": (307, b""),  # the transport hands a redirect back as it came: following is the client's call
    "bad status line": "RemoteProtocolError",
    "conflicting lengths": "RemoteProtocolError",
    "body cut short": "RemoteProtocolError",
    "not chunked encoding": "RemoteProtocolError",
}


@pytest.fixture
def server() -> Iterator[RawServer]:
    yield from serving()


def _outcome(client: httpx.Client, url: str) -> Any:
    try:
        response = client.post(url, content=b'{"q": 1}')
    except httpx.HTTPError as exc:
        return type(exc).__name__
    return response.status_code, [(k.lower(), v) for k, v in response.headers.multi_items()], response.content


@pytest.mark.parametrize("case", list(CASES))
def test_same_answer_as_stock_httpx(server: RawServer, case: str) -> None:
    wire = CASES[case]
    reply = wire if isinstance(wire, tuple) else (wire,)
    server.script(reply, reply)
    with httpx.Client(transport=LeanTransport()) as ours, httpx.Client(trust_env=False) as stock:
        got, want = _outcome(ours, server.url + "/v1/x"), _outcome(stock, server.url + "/v1/x")
    assert got == want
    assert (want if isinstance(want, str) else (want[0], want[2])) == EXPECTED[case]


# -- a pooled client's requests: straight to its transport, as Client.send hands them over ------------------


def test_a_pooled_request_goes_out_as_client_send_sends_it_and_is_logged_as_httpx_logs_it(
        server: RawServer, caplog: pytest.LogCaptureFixture) -> None:
    answer = (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",)
    server.script(answer, answer)
    client = sync_client_for(server.url, 10.0)

    def build() -> httpx.Request:
        return client.build_request("POST", f"{server.url}/v1/x", content=b'{"q": 1}', headers={"X-Key": "v"})

    try:
        request = build()
        with caplog.at_level(logging.INFO, logger="httpx"):
            response = send(client, request)
            assert response.read() == b"ok"
        stock = client.send(build())  # through every layer of Client.send
        assert stock.content == b"ok"
    finally:
        close_clients()
    assert server.wire[0] == server.wire[1]  # the same bytes on the wire, header for header
    assert response.request is request
    assert f'HTTP Request: POST {server.url}/v1/x "HTTP/1.1 200 OK"' in caplog.messages


def test_a_pooled_request_that_fails_names_its_request(server: RawServer) -> None:
    server.script((CLOSE,))
    client = sync_client_for(server.url, 10.0)
    request = client.build_request("POST", f"{server.url}/v1/x", content=b"{}")
    try:
        with pytest.raises(httpx.RemoteProtocolError) as caught:
            send(client, request)
    finally:
        close_clients()
    assert caught.value.request is request  # as httpx's request context sets it (failures.py reads it)
